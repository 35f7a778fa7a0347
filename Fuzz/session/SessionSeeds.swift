import TetherCore

/// Seed programs for fuzz-session, each a short story in the input's own format, with the
/// server's datagrams encoded by the real encoder (Samples.packets).
enum SessionSeeds {
  /// An input under construction: the opening (flags, generator seed), then operations.
  struct Program {
    var bytes: [UInt8]

    init(flags: UInt8, config: [UInt16]? = nil) {
      bytes = [flags]
      if let config {
        for (index, value) in config.enumerated() {
          // giveUpAfter (the fourth) is 32 bits wide.
          if index == 3 { bytes += [0, 0] }
          bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
      }
      bytes += [0, 0, 0, 0, 0, 0, 0, 1]
    }

    mutating func op(_ operation: Operation, _ operands: [UInt8] = []) {
      bytes.append(operation.rawValue)
      bytes += operands
    }

    /// Advances the clock by `seconds` (unit index 3: seconds).
    mutating func wait(seconds: UInt16) {
      op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
    }

    /// Delivers `packet` with the session's cookie patched in.
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
    add("accepted-silent", idle)

    for name in ["ack", "presence", "kick", "kick-same-uid", "token-expired", "session-unknown"] {
      var program = Program(flags: 0)
      program.deliver(name)
      program.wait(seconds: 2)
      program.deliver("ack")
      program.wait(seconds: 25)
      add("joined-\(name)", program)
    }
    for name in ["accept", "refuse-expired", "refuse-invalid", "kick"] {
      var program = Program(flags: 4)
      program.wait(seconds: 3)
      program.deliver(name)
      program.wait(seconds: 5)
      add("joining-\(name)", program)
    }
    for name in ["renewed", "renew-refused"] {
      var program = Program(flags: 8)
      program.op(.renew, [1])
      program.deliver(name)
      program.wait(seconds: 60)
      add("renew-\(name)", program)
    }

    var expiry = Program(flags: 8)
    expiry.wait(seconds: 20)
    expiry.wait(seconds: 30)
    expiry.op(.renew, [1])
    expiry.op(.runToDeadline)
    expiry.deliver("accept")
    add("token-expiry-renew", expiry)

    var rejoin = Program(flags: 0)
    rejoin.op(.leave)
    rejoin.op(.join, [0])
    rejoin.op(.runToDeadline)
    rejoin.deliver("accept")
    rejoin.deliver("presence")
    add("leave-join", rejoin)

    var network = Program(flags: 0)
    network.op(.networkChanged, [0])
    network.op(.runToDeadline)
    network.op(.endpointChanged)
    network.deliver("accept")
    network.wait(seconds: 12)
    add("network-change", network)

    var fast = Program(flags: 1, config: [400, 1000, 2000, 60_000, 300, 100, 50, 800])
    fast.deliver("presence")
    fast.wait(seconds: 5)
    add("fast-config", fast)

    var raw = Program(flags: 0)
    let join = Samples.packets(cookie: 0).first { $0.name == "join" }!.packet.encoded
    raw.op(.rawDatagram, [0, UInt8(join.count)] + join)
    raw.op(.message, [3, 2, 1, 0, 2, 4])
    add("raw-and-built", raw)
    return seeds
  }
}
