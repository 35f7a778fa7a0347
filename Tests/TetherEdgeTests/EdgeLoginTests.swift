// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Login sessions in the edge server (docs/PROTOCOL.md §6): LOGIN and its refusals,
/// resume within the online grace and a new session past it, remote-login takeover,
/// LOGOUT, and the token's expiry and renewal. Channel operations and member events are in
/// EdgeLoginChannelTests.swift; the admin ban and the security rules in their own files.
struct EdgeLoginTests {
  typealias Bench = LoginBench
  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B
  static let room = "room"

  /// Alice (address 0) and Bob (address 1) logged in and both in "room"; Bob's events
  /// taken (he saw Alice join).
  static func twoInRoom(config: EdgeConfig = World.config()) -> Bench {
    var bench = Bench(config: config)
    bench.logIn("bob", cookie: bob, from: Bench.address(1))
    bench.send(Bench.join(room, sequence: 1), cookie: bob, from: Bench.address(1))
    bench.logIn("alice", cookie: alice, from: Bench.address(0))
    bench.send(Bench.join(room, sequence: 1), cookie: alice, from: Bench.address(0))
    bench.send(.loginHeartbeat(sequence: 1, eventsReceived: 1), cookie: bob, from: Bench.address(1))
    return bench
  }

  /// Bob heartbeats every second (taking every event) while `until` has not come.
  static func bobKeepsAlive(_ bench: inout Bench, until end: Instant) {
    var sequence: UInt32 = 2
    while bench.now + .seconds(1) <= end {
      bench.run(for: .seconds(1))
      let taken = UInt32(Set(bench.events(to: bob)).count)
      bench.send(
        .loginHeartbeat(sequence: sequence, eventsReceived: taken), cookie: bob,
        from: Bench.address(1))
      sequence += 1
    }
    bench.run(until: end)
  }

  // MARK: - LOGIN

  @Test func login_isAccepted_withTheTokensTimeLeft_andNotResumed() {
    var bench = Bench()
    bench.now = .s(2)
    let token = Bench.token("alice", expiresAt: World.wallBase + 3602)
    let out = bench.send(
      Bench.login("alice", token: token), cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message) == [
        .loginAccept(LoginAccept(serverTimeMs: 2000, tokenTimeLeftMs: 3_600_000, resumed: false))
      ])
    #expect(out.first?.to == Bench.address(0))
    #expect(bench.server.loginSessionCount == 1)
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice))?.userID == Bench.user("alice"))
    #expect(bench.server.nextDeadline != nil)
  }

  @Test func login_withANeverExpiringToken_saysZeroTimeLeft() {
    var bench = Bench()
    let out = bench.send(Bench.login("alice"), cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message) == [
        .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false))
      ])
  }

  static let otherApp = try! AppID(validating: Array("app-2".utf8))

  /// Each refusal the LOGIN itself earns: code, and no session made.
  static let refusals: [(Message, UInt8)] = [
    (Bench.login("alice", appID: otherApp), UInt8(4)),
    (Bench.login("alice", token: Bench.token("bob")), 5),
    (Bench.login("alice", token: Bench.tampered(Bench.token("alice"))), 5),
    (Bench.login("alice", token: Bench.token("alice", appID: otherApp)), 5),
    (Bench.login("alice", token: Bench.foreignToken("alice")), 5),
    (Bench.login("alice", token: Bench.token("alice", expiresAt: World.wallBase)), 6),
    (Bench.login("alice", token: Bench.token("alice", expiresAt: World.wallBase - 100)), 6),
  ]

  @Test(arguments: refusals)
  func login_refused(message: Message, code: UInt8) {
    var bench = Bench()
    let out = bench.send(message, cookie: Self.alice, from: Bench.address(0))
    #expect(out.map(\.message) == [.loginRefuse(code: code)])
    #expect(bench.server.loginSessionCount == 0)
    // Refused at the INIT (REFUSE_SEALED, or REFUSE_CLEAR for a token that does not open).
    #expect(bench.server.counters.refusedHandshakes == 1)
    #expect(bench.server.nextDeadline == nil)
  }

  @Test func login_whenTheServerIsFull_isRefusedRejected_channelSessionsCountToo() throws {
    var bench = Bench(config: World.config(maxSessions: 2))
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(uid: 5, expiresAt: 0),
      isRejoin: false)
    let accepted = bench.send(.join(join), cookie: 50, from: Bench.address(9))
    try #require(Bench.isAccepted(accepted), "the channel session was not accepted")
    bench.send(Bench.login("alice"), cookie: Self.alice, from: Bench.address(0))
    let out = bench.send(Bench.login("bob"), cookie: Self.bob, from: Bench.address(1))
    #expect(out.map(\.message) == [.loginRefuse(code: 2)])
    // Taking over one's own user id needs no room. (The edge remembers as many consumed
    // tickets as it may hold sessions: the takeover's CONFIRM waits until the first two
    // tickets expired, 10 s.)
    bench.run(for: .seconds(11))
    bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    let takeover = bench.send(Bench.login("alice"), cookie: 77, from: Bench.address(2))
    #expect(takeover.map(\.message).contains(.kick(.remoteLogin)))
    #expect(bench.server.loginSessionCount == 1)
    // And a JOIN sees the login sessions as taking room.
    let join2 = JoinRequest(
      uid: 6, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(uid: 6, expiresAt: 0),
      isRejoin: false)
    #expect(
      bench.send(.join(join2), cookie: 60, from: Bench.address(8)).map(\.message) == [
        .refuse(.rejected)
      ])
  }

  @Test func login_repeatedBeforeTheClientShowedItHadTheAccept_isAcceptedAgain_notResumed() {
    var bench = Bench()
    let address = Bench.address(0)
    bench.send(Bench.login("alice"), cookie: Self.alice, from: address)
    bench.now = .ms(600)
    let again = bench.send(Bench.login("alice"), cookie: Self.alice, from: address)
    #expect(
      again.map(\.message) == [
        .loginAccept(LoginAccept(serverTimeMs: 600, tokenTimeLeftMs: 0, resumed: false))
      ])
    bench.send(.loginHeartbeat(sequence: 0, eventsReceived: 0), cookie: Self.alice, from: address)
    let resumed = bench.send(Bench.login("alice", relogin: true), cookie: Self.alice, from: address)
    #expect(
      resumed.map(\.message) == [
        .loginAccept(LoginAccept(serverTimeMs: 600, tokenTimeLeftMs: 0, resumed: true))
      ])
    #expect(bench.server.loginSessionCount == 1)
  }

  // MARK: - The online grace

  @Test func relogin_withinTheGrace_isResumed_movesTheSession_andOthersSeeNothing() {
    var bench = Self.twoInRoom()
    let bobEventsBefore = bench.events(to: Self.bob)
    #expect(bobEventsBefore == ["1 joined room alice"])
    Self.bobKeepsAlive(&bench, until: .ms(29_900))
    let newAddress = Bench.address(7)
    let out = bench.send(Bench.login("alice", relogin: true), cookie: Self.alice, from: newAddress)
    #expect(
      out.map(\.message) == [
        .loginAccept(
          LoginAccept(serverTimeMs: 29_900, tokenTimeLeftMs: 0, resumed: true, session: 1))
      ])
    #expect(out.first?.to == newAddress)
    // Alice keeps her channel and her numbering; her heartbeats now count from there.
    #expect(
      bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [
        Bench.channel(Self.room)
      ])
    let ack = bench.send(Bench.join("other", sequence: 2), cookie: Self.alice, from: newAddress)
    #expect(ack.map(\.message) == [.channelAck(session: 1, sequence: 2)])
    // (Her grace now runs from 29.9 s: until 59.9 s.)
    Self.bobKeepsAlive(&bench, until: .s(59))
    #expect(bench.events(to: Self.bob) == bobEventsBefore)
    #expect(bench.server.loginMembers(of: Bench.channel(Self.room)).count == 2)
  }

  @Test func silence_pastTheGrace_removesTheSession_othersGetLeft_thenJoinedWhenItReturns() {
    var bench = Self.twoInRoom()
    Self.bobKeepsAlive(&bench, until: .ms(29_999))
    #expect(bench.server.loginSessionCount == 2)
    Self.bobKeepsAlive(&bench, until: .s(31))
    #expect(bench.server.loginSessionCount == 1)
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
    #expect(bench.server.loginMembers(of: Bench.channel(Self.room)) == [Bench.user("bob")])
    // Alice's RELOGIN finds no session: a new one, so she numbers from 1 and re-joins.
    let out = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message) == [
        .loginAccept(
          LoginAccept(serverTimeMs: 31_000, tokenTimeLeftMs: 0, resumed: false, session: 2))
      ])
    let ack = bench.send(
      Bench.join(Self.room, sequence: 1), cookie: Self.alice, from: Bench.address(0))
    #expect(ack.first?.message == .channelAck(session: 2, sequence: 1))
    #expect(bench.events(to: Self.bob).suffix(1) == ["3 joined room alice"])
  }

  /// Alice last heard at 0.5 s: her grace ends at 30.5 s, between two presence ticks. Just
  /// before, her RELOGIN is resumed; at 30.5 s the grace's own deadline has removed her, and
  /// her RELOGIN is a new session.
  @Test func relogin_exactlyAtTheEndOfTheGrace_betweenTicks_isANewSession() {
    var bench = Bench()
    bench.logIn("bob", cookie: Self.bob, from: Bench.address(1))
    bench.send(Bench.join(Self.room, sequence: 1), cookie: Self.bob, from: Bench.address(1))
    bench.now = .ms(500)
    bench.logIn("alice", cookie: Self.alice, from: Bench.address(0))
    bench.send(Bench.join(Self.room, sequence: 1), cookie: Self.alice, from: Bench.address(0))
    Self.bobKeepsAlive(&bench, until: .ms(30_499))
    var justBefore = bench
    let resumed = justBefore.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(
      resumed.map(\.message) == [
        .loginAccept(
          LoginAccept(serverTimeMs: 30_499, tokenTimeLeftMs: 0, resumed: true, session: 1))
      ])
    bench.run(until: .ms(30_500))
    #expect(bench.server.loginSessionCount == 1)
    let out = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message).filter { if case .loginAccept = $0 { true } else { false } } == [
        .loginAccept(
          LoginAccept(serverTimeMs: 30_500, tokenTimeLeftMs: 0, resumed: false, session: 2))
      ])
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [])
  }

  /// Alice last heard at 0.5 s: her session ends at exactly 30.5 s, between two presence
  /// ticks (whole seconds), by the grace's own deadline.
  @Test func theGrace_endsOnTime_notOnTheNextPresenceTick() {
    var bench = Self.twoInRoom()
    bench.now = .ms(500)
    bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    Self.bobKeepsAlive(&bench, until: Instant(nanoseconds: 30_500_000_000 - 1))
    #expect(bench.server.loginSessionCount == 2)
    bench.run(until: .ms(30_500))
    #expect(bench.server.loginSessionCount == 1)
    let left = bench.sent.first {
      $0.cookie == Self.bob && $0.message != .heartbeatAck(sequence: 0, serverTimeMs: 0)
        && { if case .memberEvents = $0.message { true } else { false } }($0) && $0.at > .s(30)
    }
    #expect(left?.at == .ms(30_500))
  }

  @Test func heartbeat_pastTheGrace_getsSessionUnknown() {
    var bench = Self.twoInRoom()
    bench.run(until: .ms(30_100))
    let out = bench.send(
      .loginHeartbeat(sequence: 9, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    #expect(out.map(\.message) == [.sessionUnknown])
    #expect(bench.server.loginSessionCount == 0)
  }

  @Test func theGrace_isScaledByTheTimeScale() throws {
    let config = try EdgeConfig(
      appID: Fixture.appID, appCertificate: World.certificate, timeScale: 0.1)
    #expect(config.loginGrace == .seconds(3))
    var bench = Self.twoInRoom(config: config)
    bench.run(until: .ms(2_900))
    #expect(bench.server.loginSessionCount == 2)
    bench.run(until: .ms(3_100))
    #expect(bench.server.loginSessionCount == 0)
  }

  // MARK: - Remote login

  @Test func loginElsewhere_kicksTheOldSessionRemoteLogin_othersGetLeft_andItStaysKicked() {
    var bench = Self.twoInRoom()
    bench.now = .s(3)
    let newCookie: UInt64 = 0xC0FFEE
    let out = bench.send(Bench.login("alice"), cookie: newCookie, from: Bench.address(2))
    #expect(
      out.contains(
        LoginBench.Sent(
          at: .s(3), to: Bench.address(0), cookie: Self.alice, message: .kick(.remoteLogin))))
    #expect(
      out.contains {
        $0.cookie == newCookie && $0.to == Bench.address(2)
          && $0.message
            == .loginAccept(
              LoginAccept(serverTimeMs: 3000, tokenTimeLeftMs: 0, resumed: false, session: 2))
      })
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
    #expect(bench.server.loginSessionCount == 2)
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice)) == nil)
    // The old client, which may have lost the KICK, gets it again, whatever it sends.
    let heartbeat = bench.send(
      .loginHeartbeat(sequence: 5, eventsReceived: 1), cookie: Self.alice, from: Bench.address(0))
    #expect(heartbeat.map(\.message) == [.kick(.remoteLogin)])
    let relogin = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(relogin.map(\.message) == [.kick(.remoteLogin)])
    #expect(bench.server.loginSession(cookie: bench.id(newCookie))?.userID == Bench.user("alice"))
    // The new session re-joins: Bob sees Alice back.
    bench.send(Bench.join(Self.room, sequence: 1), cookie: newCookie, from: Bench.address(2))
    #expect(bench.events(to: Self.bob).suffix(1) == ["3 joined room alice"])
  }

  @Test func reloginAfterTheGrace_whileTheUserLoggedInElsewhere_isKicked_notATakeover() {
    var bench = Self.twoInRoom()
    // Alice goes silent past the grace; the timer removes her session.
    Self.bobKeepsAlive(&bench, until: .s(31))
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice)) == nil)
    // She logs in on another device.
    let newCookie: UInt64 = 0xC0FFEE
    bench.send(Bench.login("alice"), cookie: newCookie, from: Bench.address(2))
    #expect(bench.server.loginSession(cookie: bench.id(newCookie)) != nil)
    // The first device comes back, logging in again under its old cookie: it is told it was
    // taken over, and the newer login stays.
    let out = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(out.map(\.message) == [.kick(.remoteLogin)])
    #expect(out.first?.to == Bench.address(0))
    #expect(bench.server.loginSession(cookie: bench.id(newCookie))?.userID == Bench.user("alice"))
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice)) == nil)
    #expect(bench.server.counters.reloginsRefusedForNewerLogin == 1)
    // A fresh login (no RELOGIN flag) still takes over: the last login call wins.
    let fresh = bench.send(Bench.login("alice"), cookie: 0xF00D, from: Bench.address(3))
    #expect(fresh.contains { $0.cookie == newCookie && $0.message == .kick(.remoteLogin) })
  }

  /// A device that logs in as another user makes a new session: its handshake cannot
  /// resume a session of another user (§12.6, rule 5), and a session is never named by
  /// anything the device reuses. Its first session stays until it logs out or its grace
  /// ends (version 1's cookie named one session, so the second LOGIN ended the first).
  @Test func aDeviceLoggingInAsAnotherUser_makesANewSession_theFirstStays() {
    var bench = Self.twoInRoom()
    let first = bench.id(Self.alice)
    let out = bench.send(Bench.login("carol"), cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message).contains(
        .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false, session: 2))))
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice))?.userID == Bench.user("carol"))
    #expect(bench.server.loginSession(cookie: first)?.userID == Bench.user("alice"))
    #expect(bench.events(to: Self.bob).suffix(1) == ["1 joined room alice"])
    #expect(bench.server.loginSessionCount == 3)
  }

  // MARK: - LOGOUT

  @Test func logout_endsTheSessionAtOnce_othersGetLeft_andNothingAnswers() {
    var bench = Self.twoInRoom()
    let out = bench.send(.logout, cookie: Self.alice, from: Bench.address(0))
    #expect(
      out.map(\.message) == [
        .memberEvents(
          try! MemberEvents(
            firstSequence: 2,
            entries: [
              MemberEvent.Entry(
                kind: .left, channel: Bench.channel(Self.room), userID: Bench.user("alice"))
            ]))
      ])
    #expect(out.first?.to == Bench.address(1))
    #expect(bench.server.loginSessionCount == 1)
    // The second LOGOUT finds nothing and gets nothing.
    #expect(bench.send(.logout, cookie: Self.alice, from: Bench.address(0)).isEmpty)
    #expect(bench.server.counters.unknownSession == 1)
    // Its id was issued within a ticket lifetime: no RESET yet (§12.9), SESSION_UNKNOWN after.
    let early = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    #expect(early.isEmpty)
    bench.now = bench.now + .seconds(11)
    let heartbeat = bench.send(
      .loginHeartbeat(sequence: 2, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    #expect(heartbeat.map(\.message) == [.sessionUnknown])
  }

  // MARK: - Tokens

  @Test func tokenExpiry_endsTheSessionWithTokenExpired_othersGetLeft_repeatedAfter() {
    var bench = Bench()
    bench.logIn("bob", cookie: Self.bob, from: Bench.address(1))
    bench.send(Bench.join(Self.room, sequence: 1), cookie: Self.bob, from: Bench.address(1))
    let token = Bench.token("alice", expiresAt: World.wallBase + 10)
    bench.send(Bench.login("alice", token: token), cookie: Self.alice, from: Bench.address(0))
    bench.send(Bench.join(Self.room, sequence: 1), cookie: Self.alice, from: Bench.address(0))
    Self.bobKeepsAlive(&bench, until: .ms(9_999))
    #expect(bench.server.loginSessionCount == 2)
    Self.bobKeepsAlive(&bench, until: .s(10))
    #expect(bench.messages(to: Self.alice).last == .tokenExpired)
    #expect(bench.server.loginSessionCount == 1)
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
    let heartbeat = bench.send(
      .loginHeartbeat(sequence: 3, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    #expect(heartbeat.map(\.message) == [.tokenExpired])
    // A LOGIN under the cookie is judged by its own token: the old one is refused, a new one
    // starts a new session.
    let old = bench.send(
      Bench.login("alice", token: token, relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(old.map(\.message) == [.loginRefuse(code: 6)])
    let fresh = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(
      fresh.map(\.message) == [
        .loginAccept(
          LoginAccept(serverTimeMs: 10_000, tokenTimeLeftMs: 0, resumed: false, session: 2))
      ])
  }

  /// A cookie whose session ended with TOKEN_EXPIRED and that logged in again is live: once
  /// that new session ends by LOGOUT, its cookie is unknown, not answered with the old
  /// notice.
  @Test func aNewSessionUnderAnEndedCookie_dropsTheOldNotice() {
    var bench = Bench()
    let address = Bench.address(0)
    let token = Bench.token("alice", expiresAt: World.wallBase + 2)
    bench.send(Bench.login("alice", token: token), cookie: Self.alice, from: address)
    bench.run(until: .s(3))
    #expect(bench.messages(to: Self.alice).last == .tokenExpired)
    bench.logIn("alice", cookie: Self.alice, from: address)
    bench.send(.logout, cookie: Self.alice, from: address)
    // Once the new id is older than a ticket lifetime, 10 s (§12.9): its RESET, not the old notice.
    bench.now = bench.now + .seconds(11)
    let out = bench.send(
      .loginHeartbeat(sequence: 2, eventsReceived: 0), cookie: Self.alice, from: address)
    #expect(out.map(\.message) == [.sessionUnknown])
  }

  @Test func renewToken_beforeExpiry_keepsTheSession() {
    var bench = Bench()
    let address = Bench.address(0)
    bench.send(
      Bench.login("alice", token: Bench.token("alice", expiresAt: World.wallBase + 10)),
      cookie: Self.alice, from: address)
    bench.run(until: .s(5))
    bench.send(.loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.alice, from: address)
    let renewed = bench.send(
      .renewToken(Bench.token("alice", expiresAt: World.wallBase + 3605)), cookie: Self.alice,
      from: address)
    #expect(
      renewed.map(\.message) == [
        .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000))
      ])
    for second: UInt64 in 6...20 {
      bench.run(until: .s(second))
      bench.send(.loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.alice, from: address)
    }
    #expect(bench.server.loginSessionCount == 1)
    #expect(!bench.messages(to: Self.alice).contains(.tokenExpired))
  }

  @Test func renewToken_refused_keepsTheOldExpiry() {
    var bench = Bench()
    let address = Bench.address(0)
    bench.send(
      Bench.login("alice", token: Bench.token("alice", expiresAt: World.wallBase + 10)),
      cookie: Self.alice, from: address)
    let wrongUser = bench.send(.renewToken(Bench.token("bob")), cookie: Self.alice, from: address)
    #expect(
      wrongUser.map(\.message) == [
        .tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0))
      ])
    let expired = bench.send(
      .renewToken(Bench.token("alice", expiresAt: World.wallBase)), cookie: Self.alice,
      from: address)
    #expect(
      expired.map(\.message) == [
        .tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0))
      ])
    bench.run(until: .s(10))
    #expect(bench.messages(to: Self.alice).last == .tokenExpired)
    #expect(bench.server.loginSessionCount == 0)
  }

  // MARK: - Logging

  @Test func events_areRecordedForTheLog() {
    var config = World.config()
    config.recordsEvents = true
    var bench = Self.twoInRoom(config: config)
    bench.send(.logout, cookie: Self.alice, from: Bench.address(0))
    #expect(
      bench.server.takeEvents().map(\.description) == [
        "login bob", "login-join room user bob", "login alice", "login-join room user alice",
        "logout alice (quit)",
      ])
  }

  @Test func endings_areLoggedWithTheirCause() {
    var config = World.config()
    config.recordsEvents = true
    var bench = Bench(config: config)
    bench.logIn("alice", cookie: 1, from: Bench.address(0))
    bench.send(Bench.login("alice"), cookie: 2, from: Bench.address(1))
    let token = Bench.token("bob", expiresAt: World.wallBase + 2)
    bench.send(Bench.login("bob", token: token), cookie: 3, from: Bench.address(2))
    bench.run(until: .s(31))
    #expect(
      bench.server.takeEvents().map(\.description) == [
        "login alice", "logout alice (remote login)", "login alice", "login bob",
        "logout bob (token expired)", "logout alice (grace ended)",
      ])
  }
}
