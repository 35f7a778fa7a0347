// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Seed programs for fuzz-edge, in the input's own format (FuzzEdge.swift reads them field
/// by field, in this order).
enum EdgeSeeds {
  /// Token kinds (`makeToken`): the grant asked for, never expiring, valid for an hour,
  /// expiring in 5 s, already expired; for another user; another uid; another app; under
  /// another certificate; `W` altered.
  enum Token: UInt8 {
    case never = 0, hour = 16, soon = 8, expired = 24
    case otherUser = 17, otherUID = 18, wildcard = 19, otherApp = 20, otherCertificate = 21
    case altered = 22
  }

  struct Program {
    var bytes: [UInt8]

    /// `maxSessions` - 1, the time scale (1: unscaled), the handshake rate (1: 1000/s,
    /// 0: 2/s, so cookie replies come).
    init(maxSessions: UInt8 = 4, underLoad: Bool = false) {
      bytes = [maxSessions - 1, 1, underLoad ? 0 : 1]
    }

    mutating func op(_ operation: EdgeOperation, _ operands: [UInt8] = []) {
      bytes.append(operation.rawValue)
      bytes += operands
    }

    /// A channel INIT from device `slot` at address `address` for channel `channel` (0
    /// lobby, 1 room-2, 2 $reserved) as uid index `uid` (0: 0, 1: 1, 2: 2), then its
    /// CONFIRM from the same address (unless `confirm` is false).
    mutating func join(
      _ slot: UInt8, address: UInt8, channel: UInt8 = 0, uid: UInt8 = 1, token: Token = .hour,
      resume: Bool = false, confirm: Bool = true
    ) {
      op(.join, [slot, address, channel, uid, 0, 0, token.rawValue])
      if token == .altered { bytes.append(40) }
      bytes.append(resume ? 1 : 0)
      if confirm { op(.confirm, [slot, address]) }
    }

    /// A login INIT from `slot` at `address` as user `user` (0 alice, 1 bob, 2 carol),
    /// RELOGIN or not, then its CONFIRM.
    mutating func login(
      _ slot: UInt8, address: UInt8, user: UInt8, token: Token = .hour, relogin: Bool = false,
      resume: Bool = false, confirm: Bool = true
    ) {
      op(.login, [slot, address, user, relogin ? 1 : 0, 0, token.rawValue])
      if token == .altered { bytes.append(40) }
      bytes.append(resume ? 1 : 0)
      if confirm { op(.confirm, [slot, address]) }
    }

    mutating func heartbeat(_ slot: UInt8, address: UInt8) {
      op(.data, [slot, address, 0, 0, 0, 0, 7])
    }

    mutating func leave(_ slot: UInt8, address: UInt8) { op(.data, [slot, address, 1]) }

    mutating func renew(_ slot: UInt8, address: UInt8, token: Token = .hour) {
      op(.data, [slot, address, 2, token.rawValue])
    }

    /// A LOGIN_HEARTBEAT naming server session `session` (0...3), `events` taken.
    mutating func loginHeartbeat(_ slot: UInt8, address: UInt8, session: UInt8, events: UInt8 = 0) {
      op(.data, [slot, address, 3, 0, 0, 0, 7, session, events])
    }

    /// CHANNEL_OPERATION number `sequence` (1...4) in server session `session`: join (or
    /// leave) channel `channel`.
    mutating func operation(
      _ slot: UInt8, address: UInt8, session: UInt8, sequence: UInt8, join: Bool = true,
      channel: UInt8 = 0
    ) {
      op(.data, [slot, address, 4, channel, session, sequence - 1, join ? 1 : 0])
    }

    mutating func logout(_ slot: UInt8, address: UInt8) { op(.data, [slot, address, 5]) }

    /// PATH_RESPONSE echoing the last challenge the slot's session got.
    mutating func pathResponse(_ slot: UInt8, address: UInt8) { op(.data, [slot, address, 6]) }

    mutating func wait(seconds: UInt16) {
      op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
    }
  }

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds: [(String, [UInt8])] = []
    func add(_ name: String, _ program: Program) { seeds.append((name, program.bytes)) }

    var one = Program()
    one.join(0, address: 0)
    one.heartbeat(0, address: 0)
    one.wait(seconds: 2)
    one.renew(0, address: 0)
    one.leave(0, address: 0)
    add("join-heartbeat-renew-leave", one)

    var two = Program()
    two.join(0, address: 0)
    two.join(1, address: 2, uid: 0, token: .wildcard)
    two.op(.tickDue)
    two.heartbeat(1, address: 2)
    two.leave(1, address: 2)
    two.wait(seconds: 40)
    add("two-members-presence-forget", two)

    var expiry = Program()
    expiry.join(0, address: 0, token: .soon)
    expiry.wait(seconds: 8)
    expiry.heartbeat(0, address: 0)  // TOKEN_EXPIRED again
    expiry.join(0, address: 0, token: .soon)  // expired now: refused
    add("token-expiry-notice-repeated", expiry)

    var kick = Program()
    kick.join(0, address: 0)
    kick.join(1, address: 2, uid: 2)
    kick.op(.admin, [3, 0, 0, 1, 100, 0, 1])  // uid 1 kicked, banned for an hour, signed
    kick.heartbeat(0, address: 0)  // the KICK again
    kick.join(0, address: 0)  // BANNED
    add("admin-kick-ban", kick)

    var replaced = Program()
    replaced.join(0, address: 0)
    replaced.join(1, address: 2)  // the same uid: KICK SAME_UID to the first
    replaced.heartbeat(0, address: 0)
    add("same-uid-replaced", replaced)

    var full = Program(maxSessions: 1)
    full.join(0, address: 0)
    full.join(1, address: 2, uid: 2)  // REJECTED
    add("server-full", full)

    var resumed = Program()
    resumed.join(0, address: 0)
    resumed.heartbeat(0, address: 0)
    resumed.join(0, address: 1, resume: true)  // the session moves to new keys and address
    resumed.heartbeat(0, address: 1)
    add("resume-from-another-address", resumed)

    var strangers = Program()
    strangers.join(0, address: 2, token: .altered)  // REFUSE_CLEAR
    strangers.join(1, address: 2, token: .otherCertificate)
    strangers.join(2, address: 2, token: .otherUID)  // REFUSE_SEALED
    strangers.join(3, address: 2, channel: 2)  // reserved
    strangers.join(0, address: 0, confirm: false)
    strangers.op(.confirm, [0, 1])  // the CONFIRM from another address
    strangers.op(.rawAdmin, [2, 4, 1, 1, 5, 0x61])
    add("unauthenticated", strangers)

    var replays = Program()
    replays.join(0, address: 0)
    replays.heartbeat(0, address: 0)
    replays.op(.replay, [2, 0])  // the CONFIRM again: the ACCEPT again
    replays.op(.replay, [3, 1])  // the heartbeat from elsewhere: refused by the window
    replays.op(.mutate, [3, 0, 20, 1, 0])  // a byte of the heartbeat's tag changed
    replays.op(.mutate, [0, 0, 60, 1, 2])  // a byte of the INIT's token changed
    add("replays-and-mutations", replays)

    var roaming = Program()
    roaming.join(0, address: 0)
    roaming.heartbeat(0, address: 1)  // a new port: PATH_CHALLENGE there
    roaming.pathResponse(0, address: 1)  // its echo: the session moves
    roaming.heartbeat(0, address: 1)
    add("roaming-path-validation", roaming)

    var load = Program(underLoad: true)
    for slot: UInt8 in 0..<4 { load.join(slot, address: slot, uid: 0, token: .wildcard) }
    load.join(3, address: 3, uid: 0, token: .wildcard)  // again, with the cookie
    add("under-load-cookie-replies", load)

    var versionOne = Program()
    versionOne.join(0, address: 0)
    versionOne.op(.versionOne, [12] + [UInt8](repeating: 0, count: 12) + [2, 0])
    versionOne.op(.versionOne, [0, 1, 1])
    versionOne.heartbeat(0, address: 0)
    add("version-one-dropped", versionOne)

    var members = Program()
    members.login(0, address: 0, user: 0)
    members.loginHeartbeat(0, address: 0, session: 0)
    members.operation(0, address: 0, session: 0, sequence: 1)
    members.login(1, address: 2, user: 1)
    members.operation(1, address: 2, session: 1, sequence: 1)
    members.operation(1, address: 2, session: 1, sequence: 1)  // a repeat: answered, not applied
    members.loginHeartbeat(0, address: 0, session: 0, events: 1)
    members.operation(1, address: 2, session: 1, sequence: 2, join: false)
    members.logout(1, address: 2)
    members.logout(0, address: 0)
    add("login-members-operations-logout", members)

    var takeover = Program()
    takeover.login(0, address: 0, user: 0)
    takeover.loginHeartbeat(0, address: 0, session: 0)
    takeover.login(1, address: 2, user: 0)  // KICK REMOTE_LOGIN to the first
    takeover.loginHeartbeat(0, address: 0, session: 0)  // the KICK again
    takeover.login(2, address: 1, user: 0, relogin: true)  // a RELOGIN: KICK, no takeover
    add("login-takeover-relogin", takeover)

    var refused = Program()
    refused.login(0, address: 2, user: 0, token: .altered)
    refused.login(1, address: 2, user: 1, token: .expired)
    refused.login(2, address: 2, user: 0, token: .otherUser)
    refused.login(3, address: 2, user: 0, token: .otherApp)
    refused.loginHeartbeat(0, address: 2, session: 0)
    add("login-refused-unauthenticated", refused)

    var renewal = Program()
    renewal.login(0, address: 0, user: 2, token: .soon)
    renewal.renew(0, address: 0)  // renewed for an hour
    renewal.login(1, address: 2, user: 1, token: .soon)
    renewal.wait(seconds: 8)
    renewal.loginHeartbeat(0, address: 0, session: 0)
    renewal.loginHeartbeat(1, address: 2, session: 1)  // TOKEN_EXPIRED, repeated
    add("login-renew-token-expired", renewal)

    var ban = Program()
    ban.login(0, address: 0, user: 0)
    ban.operation(0, address: 0, session: 0, sequence: 1)
    ban.op(.adminKickUser, [3, 0, 2, 100, 0, 1, 0])  // alice banned for an hour, signed
    ban.op(.adminKickUser, [3, 1, 0, 100, 0, 2, 0xFF])  // bob, not signed
    ban.loginHeartbeat(0, address: 0, session: 0)
    ban.login(1, address: 0, user: 0)  // NOT_AUTHORIZED
    add("login-admin-kick-user-ban", ban)

    var grace = Program()
    grace.login(0, address: 0, user: 0)
    grace.operation(0, address: 0, session: 0, sequence: 1, channel: 1)
    grace.login(1, address: 2, user: 1)
    grace.operation(1, address: 2, session: 1, sequence: 1, channel: 1)
    grace.wait(seconds: 40)
    grace.op(.tickDue)
    grace.loginHeartbeat(0, address: 0, session: 0)  // its RESET
    grace.login(0, address: 0, user: 0, relogin: true, resume: true)  // a new session
    add("login-grace-ends", grace)

    var crowded = Program(maxSessions: 2)
    crowded.join(0, address: 0)
    crowded.login(1, address: 2, user: 0)
    crowded.login(2, address: 1, user: 1)  // REJECTED: no room
    add("login-server-full", crowded)

    return seeds
  }
}
