// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Seed programs for fuzz-login, each a short story in the input's own format.
enum LoginSeeds {
  typealias Program = SeedProgram<LoginOperation>

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds = SeedList<LoginOperation>(
      silent: "connected-silent", live: "connected",
      afterAccept: [
        "member-events", "channel-ack", "kick-remote-login", "login-accept",
        "login-accept-resumed", "login-refuse",
      ],
      opening: "connecting",
      unanswered: ["login-accept", "login-refuse", "kick-remote-login", "token-expired"])

    var reconnecting = Program(flags: 8)
    reconnecting.wait(seconds: 5)
    reconnecting.wait(seconds: 60)
    reconnecting.deliver("login-refuse")
    reconnecting.op(.renew, [1])
    reconnecting.op(.runToDeadline)
    reconnecting.deliver("login-accept-resumed")
    seeds.add("reconnecting-expiry-renew", reconnecting)

    var channels = Program(flags: 0)
    channels.op(.join, [0])
    channels.op(.join, [1])
    channels.op(.leave, [0])
    channels.wait(seconds: 1)
    channels.deliver("channel-ack")
    channels.deliver("member-events")
    // Three entries (kind, channel, user each), numbered from 1 again: repeats.
    channels.op(.memberEvents, [2, 0, 0, 1, 1, 1, 0, 0, 2, 1, 1])
    channels.deliver("member-events")
    seeds.add("channels-and-events", channels)

    var renew = Program(flags: 8)
    renew.op(.renew, [1])
    renew.wait(seconds: 2)
    renew.deliver("renewed")
    renew.op(.renew, [0])
    renew.deliver("renew-refused")
    seeds.add("renew", renew)

    var relogin = Program(flags: 0)
    relogin.op(.logout)
    relogin.op(.login, [0])
    relogin.op(.login, [0])
    relogin.op(.login, [0])
    relogin.op(.runToDeadline)
    relogin.deliver("login-accept")
    relogin.op(.networkChanged)
    relogin.op(.lateWakeUp, [3, 0, 20])
    seeds.add("logout-login-again", relogin)

    var aborted = Program(flags: 0)
    aborted.deliver("kick-remote-login")
    aborted.op(.login, [0])
    aborted.op(.join, [0])
    aborted.wait(seconds: 10)
    aborted.op(.logout)
    aborted.op(.login, [0])
    seeds.add("aborted-logout-login", aborted)

    // Interrupted after, heartbeat, retry base and cap, login timeout, in ms.
    var fast = Program(flags: 1, config: Program.fields([400, 100, 40, 300, 600]))
    fast.deliver("member-events")
    fast.wait(seconds: 5)
    fast.op(.login, [0])
    fast.wait(seconds: 2)
    seeds.add("fast-config", fast)

    var raw = Program(flags: 4)
    raw.op(.rawDatagram, Program.sized(Samples.packet("login-accept")))
    raw.op(.message, [1, 7])
    seeds.add("raw-and-built", raw)
    return seeds.all
  }
}
