import Testing
import TetherSim

@testable import TetherCore

/// docs/STATES.md's transition table is generated from the code by this test and checked
/// against the file, so the two cannot drift. To regenerate after a deliberate change:
/// `make docs` (runs this test with TETHER_WRITE_DOCS=1).
@Suite struct StatesTableTests {
  static let begin = "<!-- BEGIN GENERATED: swift test --filter StatesTableTests -->"

  @Test func transitionTable_inDocsStatesMD_isWhatTheCodeDoes() throws {
    try GeneratedDocs.check(section: Self.begin, is: Self.render())
  }

  // MARK: - Fixtures: one session per starting state

  /// A CONNECTED session with a one-hour token, then `then`.
  static func connected(_ then: @escaping (inout Harness) -> Void) -> () -> Harness {
    {
      var h = Harness.connected(tokenTimeLeftMs: 3_600_000)
      then(&h)
      return h
    }
  }

  static var fixtures: [(String, () -> Harness)] {
    [
      ("DISCONNECTED", { Harness() }),
      (
        "CONNECTING",
        {
          var h = Harness()
          try! h.join()
          return h
        }
      ),
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

  typealias Apply = (inout Harness) -> String

  static func call(_ body: @escaping (inout Harness) throws(TetherError) -> Void) -> Apply {
    { h in
      do throws(TetherError) {
        try body(&h)
        return "0"
      } catch {
        return "\(error.rawValue) (\(error.name))"
      }
    }
  }

  static func packet(_ message: Message, foreign: Bool = false) -> Apply {
    { h in
      h.deliver(message, cookie: foreign ? h.cookie ^ 0xFF : nil)
      return ""
    }
  }

  static var events: [(String, Apply)] {
    [
      ("`join_channel`", call { h throws(TetherError) in try h.join() }),
      ("`leave_channel`", call { h in h.leave() }),
      ("`renew_token`", call { h throws(TetherError) in try h.renew() }),
      ("IP address changed (detected)", call { h in h.networkChanged(byUser: false) }),
      ("IP address changed (app reports)", call { h in h.networkChanged(byUser: true) }),
      ("server/proxy endpoint changed", call { h in h.endpointChanged() }),
      (
        "recv ACCEPT",
        packet(
          .accept(JoinAccept(uid: 42, serverTimeMs: 0, tokenTimeLeftMs: 3_600_000, resumed: false)))
      ),
      ("recv REFUSE INVALID_APP_ID", packet(.refuse(.invalidAppID))),
      ("recv REFUSE INVALID_CHANNEL_NAME", packet(.refuse(.invalidChannelName))),
      ("recv REFUSE INVALID_TOKEN", packet(.refuse(.invalidToken))),
      ("recv REFUSE TOKEN_EXPIRED", packet(.refuse(.tokenExpired))),
      ("recv REFUSE REJECTED", packet(.refuse(.rejected))),
      ("recv HEARTBEAT_ACK", packet(.heartbeatAck(sequence: 1, serverTimeMs: 0))),
      (
        "recv PRESENCE (a member joined)",
        packet(
          .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: .joined, silentForMs: 0)])))
      ),
      ("recv KICK BANNED", packet(.kick(.banned))),
      ("recv KICK SAME_UID", packet(.kick(.sameUID))),
      ("recv TOKEN_EXPIRED", packet(.tokenExpired)),
      ("recv SESSION_UNKNOWN", packet(.sessionUnknown)),
      (
        "recv TOKEN_RENEWED (accepted)",
        packet(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 7_200_000)))
      ),
      (
        "recv TOKEN_RENEWED (refused)",
        packet(.tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0)))
      ),
      ("recv any packet with another cookie", packet(.kick(.banned), foreign: true)),
    ]
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

  // MARK: - Rendering

  static func render() -> String {
    var rows: [String] = []
    for (stateName, make) in fixtures {
      for (eventName, apply) in events {
        var h = make()
        let before = Snapshot(h)
        let mark = h.mark
        let returns = apply(&h)
        rows.append(row(stateName, eventName, returns, h, mark, before))
      }
      for (eventName, kind) in deadlines {
        var h = make()
        guard let due = h.session.link.dueTime(of: kind, own: h.session.membersDue) else {
          continue
        }
        h.now = max(h.now, due)
        let before = Snapshot(h)
        let mark = h.mark
        h.step { s, now, out in s.fire(kind, due: due, now: now, into: &out) }
        rows.append(row(stateName, eventName, "", h, mark, before))
      }
    }
    return "\n| From | Event | Returns | To | Actions, in order |\n|---|---|---|---|---|\n"
      + rows.joined(separator: "\n") + "\n"
  }

  /// What a row reports of the session's inner state, beside its actions.
  struct Snapshot {
    let lastData: Instant
    let token: Token?
    let expiry: Instant?

    init(_ h: Harness) {
      lastData = h.session.link.lastData
      token = h.session.membership == nil ? nil : h.session.link.token
      expiry = h.session.tokenExpiresAt
    }
  }

  static func row(
    _ from: String, _ event: String, _ returns: String, _ h: Harness, _ mark: Harness.Mark,
    _ before: Snapshot
  ) -> String {
    var to = "same"
    var actions: [String] = []
    let after = Snapshot(h)
    if after.lastData != before.lastData, h.state != .disconnected {
      actions.append("last data := now")
    }
    let restored = after.token == Fixture.token && before.token != Fixture.token
    if after.token != before.token, h.state != .disconnected {
      actions.append(restored ? "previous token and its expiry restored" : "token replaced")
    }
    if after.expiry != before.expiry, h.state != .disconnected, !restored {
      actions.append(after.expiry == nil ? "token expiry unknown" : "token expiry := server's")
    }
    for item in h.trace[mark.trace...] {
      switch item {
      case .sent(let packet): actions.append("send " + describe(packet.message))
      case .notified(.connectionStateChanged(let s, let r)):
        to = "**\(s.name)** / \(r.name)"
      case .notified(let n): actions.append(describe(n))
      }
    }
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
