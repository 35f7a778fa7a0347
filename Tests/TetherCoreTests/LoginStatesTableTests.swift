// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@_spi(Link) @testable import TetherCore

/// docs/STATES.md's login transition table ("Login session states"), generated from the
/// code by this test and checked against the file like the channel one (StatesTableTests).
/// To regenerate after a deliberate change: `make docs`.
@Suite struct LoginStatesTableTests {
  typealias H = LoginHarness
  static let begin = "<!-- BEGIN GENERATED: swift test --filter LoginStatesTableTests -->"
  static let room = Fixture.channel
  static let other = try! ChannelName(validating: Array("other".utf8))

  @Test func loginTransitionTable_inDocsStatesMD_isWhatTheCodeDoes() throws {
    try GeneratedDocs.check(section: Self.begin, is: Self.table.render())
  }

  static var table: Table {
    Table(
      fixtures: fixtures, events: events, deadlines: deadlines, snapshot: Snapshot.init, row: row)
  }

  /// Every starting state of the table is reached, and each fixture is what its name says.
  @Test func fixtures_areInTheStatesTheirNamesSay() {
    let expected: [(LoginState, LoginChangeReason?)] = [
      (.disconnected, nil), (.connecting, .login), (.connected, .loginSuccess),
      (.connected, .loginSuccess), (.reconnecting, .interrupted), (.reconnecting, .interrupted),
      (.aborted, .remoteLogin), (.aborted, .bannedByServer),
    ]
    let fixtures = Self.fixtures
    #expect(fixtures.count == expected.count)
    for ((name, make), (state, reason)) in zip(fixtures, expected) {
      let h = make()
      #expect(h.state == state && h.reason == reason, "\(name)")
    }
    #expect(fixtures[3].1().session.link.renewal != nil)
    #expect(fixtures[4].1().session.link.tokenExpiryReported == false)
    #expect(fixtures[5].1().session.link.tokenExpiryReported == true)
  }

  // MARK: - Fixtures: one session per starting state

  /// Logged in at 0 and accepted at 100 ms with a one-hour token, in `lobby` (acknowledged),
  /// then `then`.
  static func connected(_ then: @escaping (inout H) -> Void) -> () -> H {
    Table.fixture(
      { H.connected(tokenTimeLeftMs: 3_600_000) },
      then: {
        try! $0.join(room)
        $0.deliver(.channelAck(sequence: 1))
        then(&$0)
      })
  }

  static var fixtures: [(String, () -> H)] {
    [
      ("DISCONNECTED", { H() }),
      (
        "CONNECTING",
        Table.fixture(
          { H() },
          then: {
            try! $0.login()
            try! $0.join(room)
            $0.run(for: .ms(300))
          })
      ),
      ("CONNECTED", connected { $0.run(for: .ms(500), answering: true) }),
      (
        "CONNECTED (renewal sent)",
        connected {
          try! $0.renew()
          $0.run(for: .ms(500))
        }
      ),
      ("RECONNECTING", connected { $0.run(for: .ms(4000)) }),
      (
        "RECONNECTING (token reported expired)",
        connected {
          $0.run(for: .ms(4000))
          $0.deliver(.tokenExpired)
        }
      ),
      ("ABORTED (REMOTE_LOGIN)", connected { $0.deliver(.kick(.remoteLogin)) }),
      ("ABORTED (BANNED_BY_SERVER)", connected { $0.deliver(.kick(.banned)) }),
    ]
  }

  // MARK: - Events

  typealias Table = TransitionTable<LoginSession<SeededRandom>, Snapshot>

  static func events(_ entries: [(UInt32, MemberEvent.Kind)]) -> Message {
    .memberEvents(
      try! MemberEvents(
        firstSequence: entries[0].0,
        entries: entries.map { MemberEvent.Entry(kind: $0.1, channel: room, userID: H.otherUser) }
      ))
  }

  static var events: [(String, Table.Apply)] {
    [
      ("`login`", Table.call { h throws(TetherError) in try h.login() }),
      ("`login` (no token)", Table.call { h throws(TetherError) in try h.login(token: nil) }),
      (
        // Two refused calls (no user id) just before: refused calls count too.
        "`login`, the third call within a second",
        Table.call { h throws(TetherError) in
          for _ in 0..<2 { _ = try? h.login(userID: nil) }
          try h.login()
        }
      ),
      ("`logout`", Table.call { h throws(TetherError) in try h.logout() }),
      ("`join_channel` (a new one)", Table.call { h throws(TetherError) in try h.join(other) }),
      (
        "`join_channel` (one it is in)",
        Table.call { h throws(TetherError) in try h.join(room) }
      ),
      (
        "`leave_channel` (one it is in)", Table.call { h throws(TetherError) in try h.leave(room) }
      ),
      ("`renew_token`", Table.call { h throws(TetherError) in try h.renew() }),
      (
        "network changed",
        { h in
          h.networkChanged()
          return ""
        }
      ),
      (
        "recv LOGIN_ACCEPT (new server session)",
        Table.packet(
          .loginAccept(
            LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 7_200_000, resumed: false, session: 1)))
      ),
      (
        "recv LOGIN_ACCEPT (the session held)",
        Table.packet(
          .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 7_200_000, resumed: true)))
      ),
      ("recv LOGIN_REFUSE 2 (REJECTED)", Table.packet(.loginRefuse(code: 2))),
      ("recv LOGIN_REFUSE 4 (INVALID_APP_ID)", Table.packet(.loginRefuse(code: 4))),
      ("recv LOGIN_REFUSE 5 (INVALID_TOKEN)", Table.packet(.loginRefuse(code: 5))),
      ("recv LOGIN_REFUSE 6 (TOKEN_EXPIRED)", Table.packet(.loginRefuse(code: 6))),
      ("recv LOGIN_REFUSE 7 (NOT_AUTHORIZED)", Table.packet(.loginRefuse(code: 7))),
      ("recv LOGIN_REFUSE any other code", Table.packet(.loginRefuse(code: 9))),
      ("recv HEARTBEAT_ACK", Table.packet(.heartbeatAck(sequence: 1, serverTimeMs: 0))),
      ("recv CHANNEL_ACK", Table.packet(.channelAck(sequence: 1))),
      ("recv MEMBER_EVENTS (next in order)", Table.packet(events([(1, .joined), (2, .left)]))),
      ("recv MEMBER_EVENTS (after a gap)", Table.packet(events([(3, .joined)]))),
      ("recv KICK BANNED", Table.packet(.kick(.banned))),
      ("recv KICK REMOTE_LOGIN", Table.packet(.kick(.remoteLogin))),
      ("recv KICK SAME_UID", Table.packet(.kick(.sameUID))),
    ] + Table.tokenPackets + [
      (
        "recv a channel-profile packet (ACCEPT)",
        Table.packet(
          .accept(JoinAccept(uid: 1, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false)))
      ),
      Table.foreignPacket,
    ]
  }

  static let deadlines: [(String, LinkDeadline)] = [
    ("deadline: login_timeout since the login call", .giveUp),
    ("deadline: token expiry", .tokenExpiry),
    ("deadline: 4 s since the last proof of a round trip", .interrupted),
    ("deadline: next retry", .retry),
    ("deadline: heartbeat interval", .heartbeat),
  ]

  // MARK: - Rows

  /// What a row reports of the session's inner state, beside its actions.
  struct Snapshot {
    let link: LinkSnapshot
    let channels: [ChannelName]
    let pending: [UInt32]
    let eventsReceived: UInt32
    let counters: LoginCounters

    init(_ h: H) {
      link = LinkSnapshot(h.session)
      channels = h.session.joinedChannels
      pending = h.session.channels.pending.map(\.sequence)
      eventsReceived = h.session.channels.eventsReceived
      counters = h.session.counters
    }
  }

  static func names(_ channels: [ChannelName]) -> String {
    channels.isEmpty
      ? "none" : channels.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: ", ")
  }

  static func row(
    _ from: String, _ event: String, _ returns: String, _ h: H, _ mark: H.Mark,
    _ before: Snapshot
  ) -> String {
    let after = Snapshot(h)
    let kept = h.state != .disconnected
    var actions = Table.linkActions(before: before.link, after: after.link, kept: kept)
    if after.channels != before.channels {
      actions.append("channels: \(names(after.channels))")
    }
    if after.pending != before.pending, kept {
      actions.append(
        "unacknowledged operations: "
          + (after.pending.isEmpty
            ? "none" : after.pending.map { "#\($0)" }.joined(separator: ", ")))
    }
    if after.eventsReceived != before.eventsReceived, kept {
      actions.append("member events received := \(after.eventsReceived)")
    }
    let (to, traced) = Table.traced(
      h, since: mark, listStateChange: true, message: describe, notification: describe)
    actions += traced
    let counters = after.counters
    if actions.isEmpty && to == "same" {
      if counters.foreign != before.counters.foreign {
        actions.append("ignored (another cookie)")
      } else if counters.unexpected != before.counters.unexpected {
        actions.append("ignored (counted unexpected)")
      } else if counters.refusalsWhileReconnecting != before.counters.refusalsWhileReconnecting {
        actions.append("ignored (refusal counted; attempts go on)")
      } else if counters.eventsOutOfOrder != before.counters.eventsOutOfOrder {
        actions.append("ignored (gap counted; the server resends)")
      } else {
        actions.append("ignored")
      }
    } else if counters.refusalsWhileReconnecting != before.counters.refusalsWhileReconnecting {
      actions.append("refusal counted; attempts go on")
    }
    return "| \(from) | \(event) | \(returns) | \(to) | \(actions.joined(separator: "; ")) |"
  }

  static func describe(_ message: Message) -> String {
    switch message {
    case .login(let r): r.isRelogin ? "LOGIN (relogin)" : "LOGIN"
    case .loginHeartbeat(_, _, let received): "LOGIN_HEARTBEAT (events received \(received))"
    case .logout: "LOGOUT"
    case .channelOperation(let o):
      "CHANNEL_OPERATION #\(o.sequence) \(o.kind == .join ? "join" : "leave") \(names([o.channel]))"
    case .renewToken: "RENEW_TOKEN"
    default: "\(message)"
    }
  }

  static func describe(_ n: LoginNotification) -> String {
    switch n {
    case .connectionStateChanged: "on_connection_state_changed"
    case .loginResult(let e): "on_login_result(\(e.name))"
    case .logoutResult(let e): "on_logout_result(\(e.name))"
    case .tokenExpired: "on_token_expired"
    case .memberJoined(let c, let u):
      "on_member_joined(\(String(decoding: c, as: UTF8.self)), \(String(decoding: u, as: UTF8.self)))"
    case .memberLeft(let c, let u):
      "on_member_left(\(String(decoding: c, as: UTF8.self)), \(String(decoding: u, as: UTF8.self)))"
    case .loginAttempt(let attempt, _): "login attempt \(attempt) reported"
    }
  }
}
