// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Seed programs for fuzz-session, each a short story in the input's own format.
enum SessionSeeds {
  typealias Program = SeedProgram<Operation>

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds = SeedList<Operation>(
      silent: "accepted-silent", live: "joined", afterAccept: ["presence", "kick-same-uid"],
      opening: "joining", unanswered: ["accept", "refuse-expired", "refuse-invalid"])
    for name in ["renewed", "renew-refused"] {
      var program = Program(flags: 8)
      program.op(.renew, [1])
      program.deliver(name)
      program.wait(seconds: 60)
      seeds.add("renew-\(name)", program)
    }

    var expiry = Program(flags: 8)
    expiry.wait(seconds: 20)
    expiry.wait(seconds: 30)
    expiry.op(.renew, [1])
    expiry.op(.runToDeadline)
    expiry.deliver("accept")
    seeds.add("token-expiry-renew", expiry)

    var rejoin = Program(flags: 0)
    rejoin.op(.leave)
    rejoin.op(.join, [0])
    rejoin.op(.runToDeadline)
    rejoin.deliver("accept")
    rejoin.deliver("presence")
    seeds.add("leave-join", rejoin)

    var network = Program(flags: 0)
    network.op(.networkChanged, [0])
    network.op(.runToDeadline)
    network.op(.endpointChanged)
    network.deliver("accept")
    network.wait(seconds: 12)
    seeds.add("network-change", network)

    // interruptedAfter, heartbeatInterval, retry base and cap, lostAfter,
    // remoteOfflineAfter, giveUpAfter (32 bits: 0, 60_000), tokenWillExpireBefore, in ms.
    let config = Program.fields([400, 100, 50, 800, 1000, 2000, 0, 60_000, 300])
    var fast = Program(flags: 1, config: config)
    fast.deliver("presence")
    fast.wait(seconds: 5)
    seeds.add("fast-config", fast)

    var raw = Program(flags: 0)
    raw.op(.rawDatagram, Program.sized(Samples.packet("join")))
    raw.op(.message, [3, 2, 1, 0, 2, 4])
    seeds.add("raw-and-built", raw)
    return seeds.all
  }
}
