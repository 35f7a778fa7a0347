import TetherCore

/// Seed programs for fuzz-edge, in the input's own format.
enum EdgeSeeds {
  struct Program {
    var bytes: [UInt8]

    /// `maxSessions` - 1, then the time scale (1: unscaled).
    init(maxSessions: UInt8 = 4) { bytes = [maxSessions - 1, 1] }

    mutating func op(_ operation: EdgeOperation, _ operands: [UInt8] = []) {
      bytes.append(operation.rawValue)
      bytes += operands
    }

    /// A JOIN from address `address` under cookie `cookie` (1...5) for channel 0 as uid 1
    /// (uid index 1), with `token`: 9 a signed token for uid 1 valid for an hour, 5 one
    /// that expires in 5 s, 0 the wildcard, 3 then a length: unsigned bytes.
    mutating func join(address: UInt8, cookie: UInt8, uid: UInt8 = 1, token: [UInt8] = [9]) {
      op(.join, [address, cookie - 1, 0, uid] + token + [0, 0])
    }

    mutating func heartbeat(address: UInt8, cookie: UInt8) {
      op(.heartbeat, [address, cookie - 1, 0, 0, 0, 7])
    }

    mutating func wait(seconds: UInt16) {
      op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
    }
  }

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds: [(String, [UInt8])] = []
    func add(_ name: String, _ program: Program) { seeds.append((name, program.bytes)) }

    var one = Program()
    one.join(address: 0, cookie: 1)
    one.heartbeat(address: 0, cookie: 1)
    one.wait(seconds: 2)
    one.op(.renew, [0, 0, 9])
    one.op(.leave, [0, 0])
    add("join-heartbeat-renew-leave", one)

    var two = Program()
    two.join(address: 0, cookie: 1)
    two.join(address: 1, cookie: 2, uid: 0, token: [0])
    two.op(.tickDue)
    two.heartbeat(address: 1, cookie: 2)
    two.op(.leave, [1, 1])
    two.wait(seconds: 40)
    add("two-members-presence-forget", two)

    var expiry = Program()
    expiry.join(address: 0, cookie: 1, token: [5])
    expiry.wait(seconds: 8)
    expiry.heartbeat(address: 0, cookie: 1)
    expiry.join(address: 0, cookie: 1, token: [5])
    add("token-expiry-notice-repeated", expiry)

    var kick = Program()
    kick.join(address: 0, cookie: 1)
    kick.join(address: 1, cookie: 2, uid: 2, token: [0])
    kick.op(.admin, [3, 0, 0, 1, 100, 0, 1])
    kick.heartbeat(address: 0, cookie: 1)
    kick.join(address: 0, cookie: 3)
    add("admin-kick-ban", kick)

    var replaced = Program()
    replaced.join(address: 0, cookie: 1)
    replaced.join(address: 1, cookie: 2)
    replaced.heartbeat(address: 0, cookie: 1)
    add("same-uid-replaced", replaced)

    var full = Program(maxSessions: 1)
    full.join(address: 0, cookie: 1)
    full.join(address: 1, cookie: 2, uid: 2, token: [0])
    add("server-full", full)

    var strangers = Program()
    strangers.join(address: 2, cookie: 4, token: [3, 5, 0x61, 0x62, 0x63, 0x64, 0x65])
    strangers.heartbeat(address: 2, cookie: 5)
    strangers.op(.renew, [2, 4, 3, 2, 0x78, 0x79])
    strangers.op(.leave, [2, 3])
    strangers.op(.rawAdmin, [2, 4, 1, 1, 5, 0x61])
    add("unauthenticated", strangers)

    for (name, packet) in Samples.packets(cookie: 1) where name == "join" || name == "heartbeat" {
      var raw = Program()
      let bytes = packet.encoded
      raw.op(.raw, [0, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes)
      add("raw-\(name)", raw)
    }
    return seeds
  }
}
