// SPDX-License-Identifier: Apache-2.0
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

    /// A LOGIN from `address` under `cookie` (1...5) as user `user` (0 alice, 1 bob, 2
    /// carol) with `token` as in join (9: signed for that user, an hour), RELOGIN or not.
    mutating func login(
      address: UInt8, cookie: UInt8, user: UInt8, token: [UInt8] = [9], relogin: Bool = false
    ) {
      op(.login, [address, cookie - 1, user] + token + [0, relogin ? 1 : 0])
    }

    /// A LOGIN_HEARTBEAT that has taken `events` (0...3) member events, naming the server
    /// session of the cookie's login (the server numbers them from 0 as they are made, and
    /// the seeds' logins make them in cookie order).
    mutating func loginHeartbeat(address: UInt8, cookie: UInt8, events: UInt8 = 0) {
      op(.loginHeartbeat, [address, cookie - 1, 0, 0, 0, 7, cookie - 1, events])
    }

    /// CHANNEL_OPERATION number `sequence` (1...4): join (or leave) channel `channel`, in
    /// the server session of the cookie's login (as ``loginHeartbeat(address:cookie:events:)``).
    mutating func operation(
      address: UInt8, cookie: UInt8, sequence: UInt8, join: Bool = true, channel: UInt8 = 0
    ) {
      op(.channelOperation, [address, cookie - 1, cookie - 1, sequence - 1, join ? 1 : 0, channel])
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

    var members = Program()
    members.login(address: 0, cookie: 1, user: 0)
    members.loginHeartbeat(address: 0, cookie: 1)
    members.operation(address: 0, cookie: 1, sequence: 1)
    members.login(address: 1, cookie: 2, user: 1)
    members.operation(address: 1, cookie: 2, sequence: 1)
    members.operation(address: 1, cookie: 2, sequence: 1)  // a repeat: answered, not applied
    members.loginHeartbeat(address: 0, cookie: 1, events: 0)
    members.loginHeartbeat(address: 0, cookie: 1, events: 1)
    members.operation(address: 1, cookie: 2, sequence: 2, join: false)
    members.op(.logout, [1, 1])
    members.op(.logout, [0, 0])  // from another address: changes nothing
    add("login-members-operations-logout", members)

    var takeover = Program()
    takeover.login(address: 0, cookie: 1, user: 0)
    takeover.loginHeartbeat(address: 0, cookie: 1)
    takeover.login(address: 1, cookie: 2, user: 0)  // KICK REMOTE_LOGIN to cookie 1
    takeover.login(address: 0, cookie: 1, user: 0, relogin: true)  // the same KICK again
    takeover.login(address: 2, cookie: 3, user: 0, relogin: true)  // 7b: KICK, no takeover
    add("login-takeover-relogin", takeover)

    var refused = Program()
    refused.login(address: 2, cookie: 4, user: 0, token: [3, 5, 0x61, 0x62, 0x63, 0x64, 0x65])
    refused.login(address: 2, cookie: 4, user: 1, token: [13])  // expired
    refused.login(address: 2, cookie: 5, user: 0, token: [10, 1])  // signed for bob
    refused.op(.login, [2, 3, 0, 9, 0xFF, 0])  // another app id
    refused.loginHeartbeat(address: 2, cookie: 4)
    refused.operation(address: 2, cookie: 5, sequence: 1)
    add("login-refused-unauthenticated", refused)

    var renewal = Program()
    renewal.login(address: 0, cookie: 1, user: 2, token: [5])
    renewal.op(.renew, [0, 0, 9])  // under the login's cookie: renewed for an hour
    renewal.login(address: 1, cookie: 2, user: 1, token: [5])
    renewal.wait(seconds: 8)
    renewal.loginHeartbeat(address: 0, cookie: 1)
    renewal.loginHeartbeat(address: 1, cookie: 2)  // TOKEN_EXPIRED, repeated
    add("login-renew-token-expired", renewal)

    var ban = Program()
    ban.login(address: 0, cookie: 1, user: 0)
    ban.operation(address: 0, cookie: 1, sequence: 1)
    ban.op(.adminKickUser, [3, 0, 2, 100, 0, 1, 0])  // alice banned for an hour, signed
    ban.op(.adminKickUser, [3, 1, 0, 100, 0, 2, 0xFF])  // bob, not signed
    ban.loginHeartbeat(address: 0, cookie: 1)
    ban.login(address: 0, cookie: 2, user: 0)  // NOT_AUTHORIZED
    add("login-admin-kick-user-ban", ban)

    var grace = Program()
    grace.login(address: 0, cookie: 1, user: 0)
    grace.operation(address: 0, cookie: 1, sequence: 1, channel: 1)
    grace.login(address: 1, cookie: 2, user: 1)
    grace.operation(address: 1, cookie: 2, sequence: 1, channel: 1)
    grace.wait(seconds: 40)
    grace.op(.tickDue)
    grace.loginHeartbeat(address: 0, cookie: 1)  // SESSION_UNKNOWN
    grace.login(address: 0, cookie: 1, user: 0, relogin: true)  // a new session
    add("login-grace-ends", grace)

    var crowded = Program(maxSessions: 2)
    crowded.join(address: 0, cookie: 1)
    crowded.login(address: 1, cookie: 2, user: 0)
    crowded.login(address: 2, cookie: 3, user: 1)  // REJECTED: no room
    add("login-server-full", crowded)

    let raws = [
      "join", "heartbeat", "login", "relogin", "login-heartbeat", "channel-join", "logout",
    ]
    for (name, packet) in Samples.packets(cookie: 1) where raws.contains(name) {
      var raw = Program()
      let bytes = packet.encoded
      raw.op(.raw, [0, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes)
      add("raw-\(name)", raw)
    }
    return seeds
  }
}
