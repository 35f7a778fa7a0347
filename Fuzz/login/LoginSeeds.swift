import TetherCore

/// Seed programs for fuzz-login, each a short story in the input's own format, with the
/// server's datagrams encoded by the real encoder (Samples.packets).
enum LoginSeeds {
  /// An input under construction: the opening (flags, generator seed), then operations.
  struct Program {
    var bytes: [UInt8]

    /// `config`: login timeout, interrupted after, heartbeat, retry base and cap (ms).
    init(flags: UInt8, config: [UInt16]? = nil) {
      bytes = [flags]
      for value in config ?? [] { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
      bytes += [0, 0, 0, 0, 0, 0, 0, 1]
    }

    mutating func op(_ operation: LoginOperation, _ operands: [UInt8] = []) {
      bytes.append(operation.rawValue)
      bytes += operands
    }

    /// Advances the clock by `seconds` (unit index 3: seconds).
    mutating func wait(seconds: UInt16) {
      op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
    }

    /// Delivers `name` (a packet of Samples) with the login's cookie patched in.
    mutating func deliver(_ name: String) {
      let packet = Samples.packets(cookie: 0).first { $0.name == name }!.packet.encoded
      op(.ownCookieDatagram, [UInt8(packet.count >> 8), UInt8(packet.count & 0xFF)] + packet)
    }
  }

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds: [(String, [UInt8])] = []
    func add(_ name: String, _ program: Program) { seeds.append((name, program.bytes)) }

    var idle = Program(flags: 0)
    idle.wait(seconds: 30)
    add("connected-silent", idle)

    for name in [
      "ack", "member-events", "channel-ack", "kick", "kick-remote-login", "token-expired",
      "session-unknown", "login-accept", "login-accept-resumed", "login-refuse",
    ] {
      var program = Program(flags: 0)
      program.deliver(name)
      program.wait(seconds: 2)
      program.deliver("ack")
      program.wait(seconds: 25)
      add("connected-\(name)", program)
    }
    for name in ["login-accept", "login-refuse", "kick", "kick-remote-login", "token-expired"] {
      var program = Program(flags: 4)
      program.wait(seconds: 3)
      program.deliver(name)
      program.wait(seconds: 5)
      add("connecting-\(name)", program)
    }

    var reconnecting = Program(flags: 8)
    reconnecting.wait(seconds: 5)
    reconnecting.wait(seconds: 60)
    reconnecting.deliver("login-refuse")
    reconnecting.op(.renew, [1])
    reconnecting.op(.runToDeadline)
    reconnecting.deliver("login-accept-resumed")
    add("reconnecting-expiry-renew", reconnecting)

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
    add("channels-and-events", channels)

    var renew = Program(flags: 8)
    renew.op(.renew, [1])
    renew.wait(seconds: 2)
    renew.deliver("renewed")
    renew.op(.renew, [0])
    renew.deliver("renew-refused")
    add("renew", renew)

    var relogin = Program(flags: 0)
    relogin.op(.logout)
    relogin.op(.login, [0])
    relogin.op(.login, [0])
    relogin.op(.login, [0])
    relogin.op(.runToDeadline)
    relogin.deliver("login-accept")
    relogin.op(.networkChanged)
    relogin.op(.lateWakeUp, [3, 0, 20])
    add("logout-login-again", relogin)

    var aborted = Program(flags: 0)
    aborted.deliver("kick-remote-login")
    aborted.op(.login, [0])
    aborted.op(.join, [0])
    aborted.wait(seconds: 10)
    aborted.op(.logout)
    aborted.op(.login, [0])
    add("aborted-logout-login", aborted)

    var fast = Program(flags: 1, config: [600, 400, 100, 40, 300])
    fast.deliver("member-events")
    fast.wait(seconds: 5)
    fast.op(.login, [0])
    fast.wait(seconds: 2)
    add("fast-config", fast)

    var raw = Program(flags: 4)
    let accept = Samples.packets(cookie: 0).first { $0.name == "login-accept" }!.packet.encoded
    raw.op(.rawDatagram, [0, UInt8(accept.count)] + accept)
    raw.op(.message, [1, 7])
    add("raw-and-built", raw)
    return seeds
  }
}
