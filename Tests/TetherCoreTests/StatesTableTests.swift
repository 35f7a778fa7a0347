// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@_spi(Link) @testable import TetherCore

/// docs/STATES.md's transition table is generated from the code by this test and checked
/// against the file, so the two cannot drift. To regenerate after a deliberate change:
/// `make docs` (runs this test with TETHER_WRITE_DOCS=1).
@Suite struct StatesTableTests {
  static let begin = "<!-- BEGIN GENERATED: swift test --filter StatesTableTests -->"

  @Test func transitionTable_inDocsStatesMD_isWhatTheCodeDoes() throws {
    try GeneratedDocs.check(section: Self.begin, is: Self.table.render())
  }

  /// A join from DISCONNECTED takes its token afresh: there was none to restore (the
  /// generator once said "previous token and its expiry restored" here, taking any change
  /// to ``Fixture/token`` for the refused renewal's).
  @Test func joinFromDisconnected_replacesTheToken_restoresNone() {
    let row =
      "| DISCONNECTED | `join_channel` | 0 | **CONNECTING** / CONNECTING | token replaced; "
      + "send JOIN; join attempt reported |"
    #expect(Self.table.render().contains(row))
  }

  static var table: Table {
    Table(
      fixtures: fixtures, events: events, deadlines: deadlines,
      snapshot: { LinkSnapshot($0.session) },
      row: row)
  }

  // MARK: - Fixtures: one session per starting state

  /// A CONNECTED session with a one-hour token, then `then`.
  static func connected(_ then: @escaping (inout Harness) -> Void) -> () -> Harness {
    Table.fixture({ Harness.connected(tokenTimeLeftMs: 3_600_000) }, then: then)
  }

  static var fixtures: [(String, () -> Harness)] {
    [
      ("DISCONNECTED", { Harness() }),
      ("CONNECTING", Table.fixture({ Harness() }, then: { try! $0.join() })),
      ("CONNECTED", connected { $0.run(for: .ms(500)) }),
      (
        "CONNECTED (renewal sent)",
        connected {
          try! $0.renew()
          $0.run(for: .ms(500))
        }
      ),
      ("RECONNECTING", connected { $0.run(for: .ms(4000)) }),
      ("FAILED (TOKEN_EXPIRED)", connected { $0.deliver(.tokenExpired) }),
      ("FAILED (any other reason)", connected { $0.deliver(.kick(.banned)) }),
    ]
  }

  // MARK: - Events

  typealias Table = TransitionTable<ChannelSession<SeededRandom>, LinkSnapshot>

  static var events: [(String, Table.Apply)] {
    [
      ("`join_channel`", Table.call { h throws(TetherError) in try h.join() }),
      ("`leave_channel`", Table.call { h in h.leave() }),
      ("`renew_token`", Table.call { h throws(TetherError) in try h.renew() }),
      ("IP address changed (detected)", Table.call { h in h.networkChanged(byUser: false) }),
      ("IP address changed (app reports)", Table.call { h in h.networkChanged(byUser: true) }),
      ("server/proxy endpoint changed", Table.call { h in h.endpointChanged() }),
      (
        "recv ACCEPT",
        Table.packet(
          .accept(JoinAccept(uid: 42, serverTimeMs: 0, tokenTimeLeftMs: 3_600_000, resumed: false)))
      ),
      ("recv REFUSE INVALID_APP_ID", Table.packet(.refuse(.invalidAppID))),
      ("recv REFUSE INVALID_CHANNEL_NAME", Table.packet(.refuse(.invalidChannelName))),
      ("recv REFUSE INVALID_TOKEN", Table.packet(.refuse(.invalidToken))),
      ("recv REFUSE TOKEN_EXPIRED", Table.packet(.refuse(.tokenExpired))),
      ("recv REFUSE REJECTED", Table.packet(.refuse(.rejected))),
      ("recv HEARTBEAT_ACK", Table.packet(.heartbeatAck(sequence: 1, serverTimeMs: 0))),
      (
        "recv PRESENCE (a member joined)",
        Table.packet(
          .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: .joined, silentForMs: 0)])))
      ),
      ("recv KICK BANNED", Table.packet(.kick(.banned))),
      ("recv KICK SAME_UID", Table.packet(.kick(.sameUID))),
    ] + Table.tokenPackets + [Table.foreignPacket]
  }

  static let deadlines: [(String, LinkDeadline)] = [
    ("deadline: heartbeat interval", .heartbeat),
    ("deadline: interrupted_after since last data", .interrupted),
    ("deadline: lost_after since last data", .lost),
    ("deadline: give_up_after since last data", .giveUp),
    ("deadline: next retry", .retry),
    ("deadline: token will expire", .tokenWillExpire),
    ("deadline: token expiry", .tokenExpiry),
  ]

  // MARK: - Rows

  static func row(
    _ from: String, _ event: String, _ returns: String, _ h: Harness, _ mark: Harness.Mark,
    _ before: LinkSnapshot
  ) -> String {
    let after = LinkSnapshot(h.session)
    var actions = Table.linkActions(before: before, after: after, kept: h.state != .disconnected)
    let (to, traced) = Table.traced(
      h, since: mark, listStateChange: false, message: describe, notification: describe)
    actions += traced
    let effect =
      actions.isEmpty ? (to == "same" ? "ignored" : "—") : actions.joined(separator: "; ")
    return "| \(from) | \(event) | \(returns) | \(to) | \(effect) |"
  }

  static func describe(_ message: Message) -> String {
    switch message {
    case .join(let r): r.isRejoin ? "JOIN (rejoin)" : "JOIN"
    case .heartbeat: "HEARTBEAT"
    case .leave: "LEAVE"
    case .renewToken: "RENEW_TOKEN"
    default: "\(message)"
    }
  }

  static func describe(_ n: ChannelNotification) -> String {
    switch n {
    case .connectionStateChanged: "on_connection_state_changed"
    case .joinChannelSuccess: "on_join_channel_success"
    case .rejoinChannelSuccess: "on_rejoin_channel_success"
    case .connectionLost: "on_connection_lost"
    case .leaveChannel: "on_leave_channel"
    case .userJoined: "on_user_joined"
    case .userOffline(_, let r): "on_user_offline(\(r.name))"
    case .remoteMemberInterrupted: "remote member interrupted"
    case .remoteMemberResumed: "remote member resumed"
    case .tokenPrivilegeWillExpire: "on_token_privilege_will_expire"
    case .requestToken: "on_request_token"
    case .joinAttempt: "join attempt reported"
    }
  }
}
