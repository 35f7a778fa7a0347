// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// Datagrams that are not for the current session, because their cookie is wrong or belongs
/// to an earlier session (replayed after a new `join_channel`), change nothing, in every
/// state: the session with and without such a datagram behaves the same, to the
/// nanosecond, for the next 30 s. This is the session's own cookie check, which stays
/// inside the device (docs/PROTOCOL.md §2.1); on the wire the layer's keys keep such
/// datagrams out before they reach the session (§12.10).
struct ReplayTests {
  /// Every server message, in the variants the client treats differently.
  static let serverMessages: [Message] = {
    var messages: [Message] = [
      .accept(JoinAccept(uid: 42, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false)),
      .accept(JoinAccept(uid: 9, serverTimeMs: 5, tokenTimeLeftMs: 1_000, resumed: true)),
      .heartbeatAck(sequence: 1, serverTimeMs: 0), .kick(.banned), .kick(.sameUID),
      .tokenExpired, .sessionUnknown,
      .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 7_200_000)),
      .tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0)),
    ]
    messages += RefuseReason.allCases.map { .refuse($0) }
    for kind: PresenceEntry.Kind in [.joined, .alive, .left] {
      // uid 7 is a member in the CONNECTED states below: LEFT would drop it.
      messages.append(
        .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: kind, silentForMs: 0)])))
      messages.append(
        .presence(try! PresenceDigest([PresenceEntry(uid: 8, kind: kind, silentForMs: 100)])))
    }
    return messages
  }()

  /// A harness whose earlier session (joined, accepted, told of member 7, then left) had
  /// the cookie returned; the current one is then brought to a state by `setUp`.
  static func afterAnEarlierSession(_ setUp: (inout Harness) -> Void) -> (Harness, old: UInt64) {
    var h = Harness(seed: 5)
    try! h.join()
    h.run(for: .ms(100))
    h.accept(tokenTimeLeftMs: 600_000)
    h.deliver(
      .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: .joined, silentForMs: 0)])))
    h.run(for: .seconds(2))
    let old = h.cookie
    h.leave()
    h.run(for: .seconds(1))
    setUp(&h)
    return (h, old)
  }

  /// A new session: joined, accepted with a token clock, member 7 present.
  static func joined(_ h: inout Harness) {
    try! h.join(token: Fixture.token2)
    h.run(for: .ms(200))
    h.accept(tokenTimeLeftMs: 600_000)
    h.deliver(
      .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: .joined, silentForMs: 0)])))
    h.run(for: .ms(500))
  }

  static var states: [(String, (inout Harness) -> Void)] {
    [
      ("DISCONNECTED after leave", { _ in }),
      ("CONNECTING", { h in try! h.join(token: Fixture.token2) }),
      (
        "CONNECTING, retrying",
        { h in
          try! h.join(token: Fixture.token2)
          h.run(for: .seconds(3))
        }
      ),
      ("CONNECTED", { h in joined(&h) }),
      (
        "CONNECTED, renewal unanswered",
        { h in
          joined(&h)
          try! h.renew(Fixture.token)
        }
      ),
      (
        "RECONNECTING",
        { h in
          joined(&h)
          h.run(for: .seconds(5))
        }
      ),
      (
        "FAILED (TOKEN_EXPIRED)",
        { h in
          joined(&h)
          h.deliver(.tokenExpired)
        }
      ),
      (
        "FAILED (BANNED)",
        { h in
          joined(&h)
          h.deliver(.kick(.banned))
        }
      ),
      (
        "DISCONNECTED (INVALID_TOKEN)",
        { h in
          try! h.join(token: Fixture.token2)
          h.deliver(.refuse(.invalidToken))
        }
      ),
    ]
  }

  /// What a session did: every notification and datagram with its time, and its state.
  static func behaviour(_ h: Harness) -> [String] {
    h.log.map { "\($0.at.nanoseconds) \($0.notification)" }
      + h.sent.map { "\($0.at.nanoseconds) sent \($0.packet.encoded)" }
      + ["\(h.state) \(String(describing: h.reason))"]
  }

  @Test(arguments: 0..<9)
  func replayedAndForeignDatagrams_changeNothing(_ index: Int) {
    let (name, setUp) = Self.states[index]
    let (base, old) = Self.afterAnEarlierSession(setUp)
    let current = base.cookie
    #expect(old != current || name.hasPrefix("DISCONNECTED after"), "\(name): no new cookie")
    var control = base
    control.run(for: .seconds(30))
    let expected = Self.behaviour(control)
    var foreign: [UInt64] = [old, current ^ 1, current ^ (1 << 63), 0, .max]
    if name.hasPrefix("DISCONNECTED") { foreign.append(current) }  // no session: nothing is ours
    var checked = 0
    for cookie in Set(foreign) {
      for message in Self.serverMessages {
        var h = base
        h.deliver(message, cookie: cookie)
        #expect(h.session.counters.foreign == base.session.counters.foreign + 1)
        #expect(h.log.count == base.log.count && h.sent.count == base.sent.count)
        #expect(h.session.nextDeadline == base.session.nextDeadline)
        h.run(for: .seconds(30))
        #expect(
          Self.behaviour(h) == expected, "\(name): \(message) under cookie \(cookie) changed it")
        checked += 1
      }
    }
    #expect(checked >= 4 * Self.serverMessages.count)
  }

  /// The same datagrams under the current cookie do change these states: the test above
  /// would see a missing cookie check.
  @Test func theSameDatagrams_underTheCurrentCookie_doChangeTheSession() {
    let (base, _) = Self.afterAnEarlierSession { h in Self.joined(&h) }
    var changed = 0
    for message in Self.serverMessages {
      var h = base
      h.deliver(message)
      h.run(for: .seconds(30))
      var control = base
      control.run(for: .seconds(30))
      if Self.behaviour(h) != Self.behaviour(control) { changed += 1 }
    }
    // KICKs, TOKEN_EXPIRED, SESSION_UNKNOWN, the ack and presence news change a CONNECTED
    // session; ACCEPT, REFUSE and an unasked TOKEN_RENEWED do not.
    #expect(changed >= 8)
  }
}
