// SPDX-License-Identifier: Apache-2.0
import TetherSim

@_spi(Link) @testable import TetherCore

/// A transition table of docs/STATES.md, generated from the code: for every starting state
/// (a fixture), every event and every deadline that applies, one row of what the session
/// returned, the state it went to and what it did, in order. Both profiles' tables are
/// rendered by this one type; each suite supplies its fixtures, events and wording
/// (StatesTableTests, LoginStatesTableTests).
struct TransitionTable<Session: TabledSession, Snapshot> {
  typealias H = SessionHarness<Session>
  /// An event: applies itself and returns what the call returned ("" for a packet).
  typealias Apply = (inout H) -> String

  var fixtures: [(String, () -> H)]
  var events: [(String, Apply)]
  var deadlines: [(String, LinkDeadline)]
  /// What a row reports of the session's inner state, before and after.
  var snapshot: (H) -> Snapshot
  /// The row of an event from a fixture: (from, event, returns, h, mark, before).
  var row: (String, String, String, H, H.Mark, Snapshot) -> String

  func render() -> String {
    var rows: [String] = []
    for (stateName, make) in fixtures {
      for (eventName, apply) in events {
        var h = make()
        let before = snapshot(h)
        let mark = h.mark
        let returns = apply(&h)
        rows.append(row(stateName, eventName, returns, h, mark, before))
      }
      for (eventName, kind) in deadlines {
        var h = make()
        guard let due = h.session.link.dueTime(of: kind, own: h.session.ownDue) else { continue }
        h.now = max(h.now, due)
        let before = snapshot(h)
        let mark = h.mark
        h.step { s, now, out in s.fire(kind, due: due, now: now, into: &out) }
        rows.append(row(stateName, eventName, "", h, mark, before))
      }
    }
    return "\n| From | Event | Returns | To | Actions, in order |\n|---|---|---|---|---|\n"
      + rows.joined(separator: "\n") + "\n"
  }

  // MARK: - Fixtures and events

  /// A fixture: a harness made by `start`, then taken on by `then`.
  static func fixture(_ start: @escaping () -> H, then: @escaping (inout H) -> Void) -> () -> H {
    {
      var h = start()
      then(&h)
      return h
    }
  }

  /// A call of the session: "0", or its code of the one error space (docs/BEHAVIOUR.md
  /// §4.3) and that code's name.
  static func call(_ body: @escaping (inout H) throws(TetherError) -> Void) -> Apply {
    { h in
      do throws(TetherError) {
        try body(&h)
        return "0"
      } catch {
        return "\(error.rawValue) (\(error.name))"
      }
    }
  }

  /// The server sends `message`, with this session's cookie or (`foreign`) another.
  static func packet(_ message: Message, foreign: Bool = false) -> Apply {
    { h in
      h.deliver(message, cookie: foreign ? h.cookie ^ 0xFF : nil)
      return ""
    }
  }

  /// The server's packets of the link that both tables list, in this order.
  static var tokenPackets: [(String, Apply)] {
    [
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
    ]
  }

  /// Both tables' last event.
  static var foreignPacket: (String, Apply) {
    ("recv any packet with another cookie", packet(.kick(.banned), foreign: true))
  }

  // MARK: - Rows

  /// What the link's own state says of a step: the proof of the round trip, the token and
  /// its expiry (only while a session is kept). The fixtures renew ``Fixture/token`` with
  /// ``Fixture/token2``, so only a step from the renewed token back to the first restores
  /// one; any other change of token replaces it (a join or login of a session held by none
  /// takes its token afresh: nothing was there to restore).
  static func linkActions(before: LinkSnapshot, after: LinkSnapshot, kept: Bool) -> [String] {
    let restored = before.token == Fixture.token2 && after.token == Fixture.token
    var actions: [String] = []
    if after.lastData != before.lastData, kept { actions.append("last data := now") }
    if after.token != before.token, kept {
      actions.append(restored ? "previous token and its expiry restored" : "token replaced")
    }
    if after.expiry != before.expiry, kept, !restored {
      actions.append(after.expiry == nil ? "token expiry unknown" : "token expiry := server's")
    }
    return actions
  }

  /// The step's packets and notifications since `mark`, spelled by the profile, and the
  /// state it went to ("same" when none). With `listStateChange`, a state change is an
  /// action of its own too.
  static func traced(
    _ h: H, since mark: H.Mark, listStateChange: Bool, message: (Message) -> String,
    notification: (Session.Notification) -> String
  ) -> (to: String, actions: [String]) {
    var to = "same"
    var actions: [String] = []
    for item in h.trace[mark.trace...] {
      switch item {
      case .sent(let packet): actions.append("send " + message(packet.message))
      case .notified(let n):
        guard let change = Session.stateChange(n) else {
          actions.append(notification(n))
          continue
        }
        to = change
        if listStateChange { actions.append(notification(n)) }
      }
    }
    return (to, actions)
  }
}

/// What a table row reports of the link: the last proof of the round trip, the token
/// (nil while no session is held) and its expiry.
struct LinkSnapshot {
  let lastData: Instant
  let token: Token?
  let expiry: Instant?

  init<S: TabledSession>(_ session: S) {
    lastData = session.link.lastData
    token = session.link.cookie == 0 ? nil : session.link.token
    expiry = session.link.tokenExpiresAt
  }
}

/// What a transition table needs of a session beyond a harness's and its link's.
protocol TabledSession: HarnessedSession, LinkSession {
  /// "**STATE** / REASON" for a state change; nil for any other notification.
  static func stateChange(_ notification: Notification) -> String?
}

extension ChannelSession: TabledSession where Random == SeededRandom {
  static func stateChange(_ notification: ChannelNotification) -> String? {
    guard case .connectionStateChanged(let s, let r) = notification else { return nil }
    return "**\(s.name)** / \(r.name)"
  }
}

extension LoginSession: TabledSession where Random == SeededRandom {
  static func stateChange(_ notification: LoginNotification) -> String? {
    guard case .connectionStateChanged(let s, let r) = notification else { return nil }
    return "**\(s.name)** / \(r.name)"
  }
}
