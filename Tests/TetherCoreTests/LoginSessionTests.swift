// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@_spi(Link) @testable import TetherCore

/// The login session of docs/BEHAVIOUR.md §2 in virtual time: every transition, every login and
/// logout error code, the 6 s login timeout, the 4 s liveness rule, reconnection that never
/// gives up, ABORTED, token expiry while reconnecting, and channel membership.
@Suite struct LoginSessionTests {
  typealias H = LoginHarness
  static let room = Fixture.channel
  static let other = try! ChannelName(validating: Array("other".utf8))

  static func state(_ s: LoginState, _ r: LoginChangeReason) -> LoginNotification {
    .connectionStateChanged(s, r)
  }

  // MARK: - Numbers (docs/BEHAVIOUR.md §2)

  @Test func statesReasonsAndErrorCodes_haveTheSpecsNumbers() {
    #expect(LoginState.allCases.map(\.rawValue) == [1, 2, 3, 4, 5])
    #expect(LoginChangeReason.allCases.map(\.rawValue) == Array(1...9))
    #expect(LoginError.allCases.map(\.rawValue) == Array(0...10) + [101])
    #expect(LogoutError.allCases.map(\.rawValue) == [0, 1, 101, 102])
    #expect(LoginChangeReason.allCases.map(\.state.rawValue) == [2, 3, 1, 1, 4, 1, 5, 5, 1])
  }

  // MARK: - Login

  @Test func login_connecting_thenAccepted_resultBeforeTheStateChange() throws {
    var h = H()
    try h.login()
    #expect(h.mainNotifications() == [Self.state(.connecting, .login)])
    let logins = h.logins()
    #expect(logins.count == 1 && logins[0].at == .zero)
    #expect(logins[0].request.isRelogin == false && logins[0].request.userID == H.user)
    #expect(h.cookie != 0)
    h.run(for: .ms(150))
    let mark = h.mark
    h.accept()
    #expect(
      h.mainNotifications(since: mark) == [
        .loginResult(.ok), Self.state(.connected, .loginSuccess),
      ])
    #expect(h.session.nextDeadline == h.now + .seconds(1))
  }

  @Test func login_withoutAnAnswer_retriesThenTimesOutAtExactly6s() throws {
    var h = H()
    try h.login()
    h.run(for: .seconds(30))
    #expect(
      h.mainNotifications() == [
        Self.state(.connecting, .login), .loginResult(.timeout),
        Self.state(.disconnected, .loginTimeout),
      ])
    #expect(h.time(of: .loginResult(.timeout)) == .zero + .seconds(6))
    let logins = h.logins()
    #expect(logins.count >= 3)
    #expect(logins.allSatisfy { $0.at < .zero + .seconds(6) && !$0.request.isRelogin })
    #expect(h.session.nextDeadline == nil)
    #expect(h.session.userID == nil)
  }

  @Test(arguments: [
    (UInt8(2), LoginError.rejected), (4, .invalidAppID), (5, .invalidToken), (6, .tokenExpired),
    (7, .notAuthorized), (1, .unknown), (3, .unknown), (8, .unknown), (9, .unknown),
    (255, .unknown),
  ])
  func login_refused_reportsTheCode_thenDisconnectedLoginFailure(code: UInt8, error: LoginError)
    throws
  {
    var h = H()
    try h.login()
    h.run(for: .ms(50))
    let mark = h.mark
    h.deliver(.loginRefuse(code: code))
    #expect(
      h.mainNotifications(since: mark) == [
        .loginResult(error), Self.state(.disconnected, .loginFailure),
      ])
    h.run(for: .seconds(60))
    #expect(h.sent.count == mark.sent)
  }

  @Test func tokenExpired_whileConnecting_isARefusal() throws {
    var h = H()
    try h.login()
    let mark = h.mark
    h.deliver(.tokenExpired)
    #expect(
      h.mainNotifications(since: mark) == [
        .loginResult(.tokenExpired), Self.state(.disconnected, .loginFailure),
      ])
  }

  // MARK: - Call rules

  @Test func login_refusesOnTheSpot_inTheDocumentedOrder() throws {
    var h = H()
    #expect(throws: TetherError.invalidArgument) { try h.login(token: nil) }
    h.now = h.now + .seconds(1)
    #expect(throws: TetherError.invalidArgument) { try h.login(userID: nil) }
    h.now = h.now + .seconds(1)
    try h.login()
    h.now = h.now + .seconds(1)
    #expect(throws: TetherError.alreadyLoggedIn) { try h.login() }
    #expect(h.mainNotifications() == [Self.state(.connecting, .login)])
    // The one error space (docs/BEHAVIOUR.md §2.4): -2 and -208, not the negated login
    // results 3 INVALID_ARGUMENT and 8 ALREADY_LOGIN (what a result callback would say).
    #expect(
      TetherError.invalidArgument.rawValue == -2 && TetherError.alreadyLoggedIn.rawValue == -208)
    #expect(LoginError.invalidArgument.rawValue == 3 && LoginError.alreadyLogin.rawValue == 8)
  }

  @Test func login_moreThanTwoCallsASecond_isTooOften_countingRefusedCalls() throws {
    var h = H()
    #expect(throws: TetherError.invalidArgument) { try h.login(token: nil) }
    h.now = .zero + .ms(400)
    try h.login()
    h.now = .zero + .ms(999)
    #expect(throws: TetherError.tooOften) { try h.login() }
    // A refusal as too often is not counted: at 1 s the first call has aged out.
    h.now = .zero + .ms(1000)
    #expect(throws: TetherError.alreadyLoggedIn) { try h.login() }
    h.now = .zero + .ms(1399)
    #expect(throws: TetherError.tooOften) { try h.login() }
    h.now = .zero + .ms(1400)
    try h.logout()
    try h.login()
    #expect(h.state == .connecting)
    #expect(TetherError.tooOften.rawValue == -210 && LoginError.tooOften.rawValue == 10)
  }

  @Test func logout_whenDisconnected_isNotLoggedIn_andChangesNothing() {
    var h = H()
    #expect(throws: TetherError.notLoggedIn) { try h.logout() }
    #expect(h.log.isEmpty && h.sent.isEmpty)
    #expect(TetherError.notLoggedIn.rawValue == -302 && LogoutError.notLoggedIn.rawValue == 102)
  }

  // MARK: - Logout from every state

  @Test func logout_whileConnecting_reportsTheLoginAsUnknown() throws {
    var h = H()
    try h.login()
    let mark = h.mark
    try h.logout()
    #expect(
      h.mainNotifications(since: mark) == [
        .loginResult(.unknown), Self.state(.disconnected, .logout), .logoutResult(.ok),
      ])
    #expect(h.sentMessages(since: mark) == [.logout, .logout])
    h.run(for: .seconds(60))
    #expect(h.sent.count == mark.sent + 2)
  }

  @Test func logout_whileConnectedOrReconnecting_sendsLogoutTwice() throws {
    for outage in [false, true] {
      var h = H.connected()
      if outage { h.run(for: .seconds(5)) }
      #expect(h.state == (outage ? .reconnecting : .connected))
      let mark = h.mark
      try h.logout()
      #expect(
        h.mainNotifications(since: mark) == [
          Self.state(.disconnected, .logout), .logoutResult(.ok),
        ])
      #expect(h.sentMessages(since: mark) == [.logout, .logout])
      #expect(h.session.nextDeadline == nil)
    }
  }

  // MARK: - Liveness and reconnection

  @Test func healthyLink_staysConnected_heartbeatingEverySecond() throws {
    var h = H.connected()
    let start = h.now
    h.run(for: .seconds(120), answering: true)
    #expect(h.state == .connected)
    let beats = h.sent.filter {
      if case .loginHeartbeat = $0.packet.message { true } else { false }
    }
    #expect(beats.count == 120)
    #expect(beats.first?.at == start + .seconds(1))
  }

  @Test func noAnswerFor4s_reconnecting_interrupted_thenRelogins_forEver() throws {
    var h = H.connected()
    let lastData = h.now
    h.run(for: .seconds(3600))
    #expect(h.time(of: Self.state(.reconnecting, .interrupted)) == lastData + .seconds(4))
    #expect(h.state == .reconnecting)
    let relogins = h.logins().dropFirst()
    #expect(relogins.allSatisfy { $0.request.isRelogin })
    #expect(relogins.count > 400)
    // Never further apart than the backoff cap: a healed link is noticed within 8 s.
    let times = relogins.map(\.at)
    for (a, b) in zip(times, times.dropFirst()) { #expect(b.since(a) <= .seconds(8)) }
    #expect(
      h.log.allSatisfy {
        if case .loginResult = $0.notification { $0.at < lastData + .seconds(1) } else { true }
      })
  }

  @Test func reconnected_isLoginSuccess_withoutASecondLoginResult() throws {
    var h = H.connected()
    h.run(for: .seconds(30))
    let mark = h.mark
    h.accept(resumed: true)
    #expect(h.mainNotifications(since: mark) == [Self.state(.connected, .loginSuccess)])
  }

  @Test func oneWayOutage_memberEventsStillArriving_isInterruptedAt4s() throws {
    var h = H.connected()
    try h.join()
    let lastData = h.now
    for second in 1...6 {
      h.run(until: lastData + .seconds(UInt64(second)) - .ms(1))
      h.events(first: UInt32(second), [(.joined, Self.room, H.otherUser)])
    }
    #expect(h.time(of: Self.state(.reconnecting, .interrupted)) == lastData + .seconds(4))
  }

  @Test func sessionUnknown_whileConnected_reloginsAtOnce() throws {
    var h = H.connected()
    h.run(for: .ms(300), answering: true)
    let mark = h.mark
    h.deliver(.sessionUnknown)
    #expect(h.mainNotifications(since: mark) == [Self.state(.reconnecting, .interrupted)])
    #expect(h.logins(since: mark).count == 1 && h.logins(since: mark)[0].at == h.now)
  }

  @Test func networkChanged_whileConnected_sendsARelogin_withoutAStateChange() throws {
    var h = H.connected()
    let mark = h.mark
    h.networkChanged()
    #expect(h.mainNotifications(since: mark) == [])
    #expect(h.logins(since: mark).map(\.request.isRelogin) == [true])
    h.accept(resumed: true)
    #expect(h.mainNotifications(since: mark) == [])
    #expect(h.state == .connected)
  }

  // MARK: - ABORTED

  @Test(arguments: [
    (KickReason.remoteLogin, LoginChangeReason.remoteLogin), (.banned, .bannedByServer),
  ])
  func kicked_aborted_thenOnlyLogoutThenLogin(kick: KickReason, reason: LoginChangeReason) throws {
    var h = H.connected()
    let mark = h.mark
    h.deliver(.kick(kick))
    #expect(h.mainNotifications(since: mark) == [Self.state(.aborted, reason)])
    #expect(h.session.nextDeadline == nil)
    h.run(for: .seconds(60))
    #expect(h.sent.count == mark.sent)
    #expect(throws: TetherError.alreadyLoggedIn) { try h.login() }
    #expect(throws: TetherError.notReady) { try h.join() }
    let beforeLogout = h.mark
    try h.logout()
    #expect(h.sentMessages(since: beforeLogout) == [])
    #expect(
      h.mainNotifications(since: beforeLogout) == [
        Self.state(.disconnected, .logout), .logoutResult(.ok),
      ])
    try h.login()
    #expect(h.state == .connecting)
  }

  @Test func bannedWhileReconnecting_notAuthorized_isAbortedBanned() throws {
    var h = H.connected()
    h.run(for: .seconds(10))
    let mark = h.mark
    h.deliver(.loginRefuse(code: 7))
    #expect(h.mainNotifications(since: mark) == [Self.state(.aborted, .bannedByServer)])
  }

  @Test func kickedBeforeTheFirstAccept_reportsTheLoginResultFirst() throws {
    var h = H()
    try h.login()
    h.deliver(.kick(.banned))
    #expect(
      h.mainNotifications().suffix(2) == [
        .loginResult(.notAuthorized), Self.state(.aborted, .bannedByServer),
      ])
  }

  // MARK: - Tokens

  @Test func tokenExpiry_whileReconnecting_isReportedOnce_withoutAStateChange() throws {
    var h = H.connected(tokenTimeLeftMs: 20_000)
    let acceptedAt = h.now
    h.run(for: .seconds(60))
    #expect(h.time(of: .tokenExpired) == acceptedAt + .seconds(20))
    #expect(h.mainNotifications().filter { $0 == .tokenExpired }.count == 1)
    #expect(h.state == .reconnecting)
    // A relogin refused for the token says nothing more until a new token comes.
    h.deliver(.loginRefuse(code: 6))
    #expect(h.mainNotifications().filter { $0 == .tokenExpired }.count == 1)
    #expect(h.state == .reconnecting)
    try h.renew()
    let mark = h.mark
    h.run(for: .seconds(9))
    #expect(h.logins(since: mark).allSatisfy { $0.request.token == Fixture.token2 })
    #expect(!h.logins(since: mark).isEmpty)
    h.deliver(.loginRefuse(code: 5))
    #expect(h.mainNotifications().filter { $0 == .tokenExpired }.count == 2)
    h.accept(resumed: true)
    #expect(h.state == .connected)
  }

  @Test func tokenExpiry_whileConnected_isTheServersCall() throws {
    var h = H.connected(tokenTimeLeftMs: 2_000)
    h.run(for: .seconds(30), answering: true)
    #expect(h.state == .connected)
    #expect(!h.mainNotifications().contains(.tokenExpired))
    let mark = h.mark
    h.deliver(.tokenExpired)
    #expect(
      h.mainNotifications(since: mark) == [.tokenExpired, Self.state(.disconnected, .tokenExpired)])
    #expect(h.session.userID == nil)
  }

  @Test func renewToken_whileConnected_sentUntilAnswered_refusalRestoresTheOldToken() throws {
    var h = H.connected(tokenTimeLeftMs: 60_000)
    let expiry = h.session.tokenExpiresAt
    let mark = h.mark
    try h.renew()
    #expect(h.sentMessages(since: mark) == [.renewToken(Fixture.token2)])
    h.run(for: .ms(1000))
    #expect(h.sentMessages(since: mark).filter { $0 == .renewToken(Fixture.token2) }.count == 2)
    let refusedAt = h.mark
    h.deliver(.tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0)))
    #expect(h.mainNotifications(since: refusedAt) == [.tokenExpired])
    #expect(h.session.tokenExpiresAt == expiry)
    try h.renew()
    h.deliver(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 90_000)))
    #expect(h.session.tokenExpiresAt == h.now + .seconds(90))
    let after = h.mark
    h.run(for: .ms(1000))
    #expect(!h.sentMessages(since: after).contains(.renewToken(Fixture.token2)))
  }

  /// The channel's bug of a renewal while connecting (CallRulesTests), in the login: a
  /// LOGIN with the old token went out before the renewal, so the accept may be its answer
  /// and the server may hold the old token: the new one follows in a RENEW_TOKEN.
  @Test func renewToken_whileReconnecting_afterALoginWithTheOldToken_isRenewedOnceAccepted()
    throws
  {
    var h = H.connected(tokenTimeLeftMs: 60_000)
    h.run(for: .ms(4100))
    #expect(h.state == .reconnecting)
    #expect(h.logins().last?.request.token == Fixture.token)
    try h.renew()
    let mark = h.mark
    h.accept(resumed: true, tokenTimeLeftMs: 60_000)
    #expect(h.sentMessages(since: mark).contains(.renewToken(Fixture.token2)))
    h.deliver(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000)))
    #expect(h.session.tokenExpiresAt == h.now + .seconds(3600))
    let settled = h.mark
    h.run(for: .ms(2100), answering: true)
    #expect(!h.sentMessages(since: settled).contains(.renewToken(Fixture.token2)))
  }

  /// A relogin that carried the renewed token settles the RENEW_TOKEN still out, as a
  /// channel's rejoin does (the twins drifted: the login kept resending it, and a late
  /// refusal of it brought back the token the server had replaced).
  @Test func renewToken_whileConnected_aReloginWithTheNewTokenSettlesIt() throws {
    var h = H.connected(tokenTimeLeftMs: 3_600_000)
    try h.renew()
    h.run(for: .ms(4100))  // no answer: INTERRUPTED, RELOGINs with the new token
    #expect(h.state == .reconnecting)
    #expect(h.logins().last?.request.token == Fixture.token2)
    h.accept(resumed: true, tokenTimeLeftMs: 3_600_000)
    #expect(h.session.tokenExpiresAt == h.now + .seconds(3600))
    let mark = h.mark
    h.run(for: .ms(2100), answering: true)
    #expect(!h.sentMessages(since: mark).contains(.renewToken(Fixture.token2)))
    h.deliver(.tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0)))
    #expect(h.session.link.token == Fixture.token2)
    #expect(!h.mainNotifications().contains(.tokenExpired))
  }

  @Test func renewToken_whenNotLoggedIn_isNotReady() {
    var h = H()
    #expect(throws: TetherError.notReady) { try h.renew() }
  }

  // MARK: - Channels

  @Test func joinAndLeave_callRules() throws {
    var h = H()
    #expect(throws: TetherError.notReady) { try h.join() }
    try h.login()
    try h.join()  // queued while CONNECTING
    #expect(throws: TetherError.joinChannelRejected) { try h.join() }
    #expect(throws: TetherError.notReady) { try h.leave(Self.other) }
    for index in 1..<LoginChannels.maximum {
      try h.join(try ChannelName(validating: Array("c\(index)".utf8)))
    }
    #expect(throws: TetherError.joinChannelRejected) { try h.join(Self.other) }
    try h.leave()
    try h.join(Self.other)
    #expect(h.session.joinedChannels.count == LoginChannels.maximum)
  }

  @Test func operations_numberedFrom1_sentWhenConnected_resentUntilAcknowledged() throws {
    var h = H()
    try h.login()
    try h.join()
    #expect(!h.sentMessages().contains { if case .channelOperation = $0 { true } else { false } })
    h.accept()
    let join = ChannelOperation(sequence: 1, kind: .join, channel: Self.room)
    #expect(h.sentMessages().last == .channelOperation(join))
    let mark = h.mark
    h.run(for: .seconds(1))
    #expect(h.sentMessages(since: mark).contains(.channelOperation(join)))
    h.deliver(.channelAck(sequence: 1))
    #expect(h.session.pendingChannelOperations == 0)
    try h.leave()
    #expect(
      h.sentMessages().last
        == .channelOperation(ChannelOperation(sequence: 2, kind: .leave, channel: Self.room)))
  }

  @Test func operations_moreThan32Unacknowledged_areRefusedNotReady() throws {
    var h = H.connected()
    for round in 0..<16 {
      try h.join()
      #expect(h.session.pendingChannelOperations == 2 * round + 1)
      try h.leave()
    }
    #expect(throws: TetherError.notReady) { try h.join() }
    h.deliver(.channelAck(sequence: 32))
    try h.join()
  }

  @Test func backWithinTheGrace_resumed_keepsChannelsAndEventNumbers() throws {
    var h = H.connected()
    try h.join()
    h.deliver(.channelAck(sequence: 1))
    h.events(first: 1, [(.joined, Self.room, H.otherUser)])
    h.run(for: .seconds(10))
    let mark = h.mark
    h.accept(resumed: true)
    #expect(
      !h.sentMessages(since: mark).contains {
        if case .channelOperation = $0 { true } else { false }
      })
    h.run(for: .seconds(1))
    #expect(h.sentMessages(since: mark) == [.loginHeartbeat(sequence: 4, eventsReceived: 1)])
  }

  @Test func backAfterTheGrace_newServerSession_rejoinsEveryChannelFrom1() throws {
    var h = H.connected()
    try h.join()
    try h.join(Self.other)
    h.deliver(.channelAck(sequence: 2))
    h.events(first: 1, [(.joined, Self.room, H.otherUser)])
    h.run(for: .seconds(40))
    let mark = h.mark
    h.accept(resumed: false, session: 1)  // a new server session: another number
    // Numbered in the new session, and naming it.
    let rejoins: [Message] = [
      .channelOperation(ChannelOperation(session: 1, sequence: 1, kind: .join, channel: Self.room)),
      .channelOperation(
        ChannelOperation(session: 1, sequence: 2, kind: .join, channel: Self.other)),
    ]
    #expect(h.sentMessages(since: mark) == rejoins)
    // Until acknowledged they go again with each heartbeat, which counts events from 0.
    h.run(for: .seconds(1))
    #expect(
      h.sentMessages(since: mark)
        == rejoins + [.loginHeartbeat(sequence: 4, session: 1, eventsReceived: 0)] + rejoins)
  }

  /// A late answer to an earlier LOGIN of the session held says "not resumed" (the server
  /// had not seen the client confirm yet) under the same server session: nothing restarts,
  /// or every later member event would be taken as a repeat. (Found by the login simulator,
  /// seed 136612.)
  @Test func aLateAcceptOfTheSameServerSession_keepsTheNumbering() throws {
    var h = H()
    try h.login()
    h.accept(session: 5)
    try h.join()
    h.deliver(.channelAck(session: 5, sequence: 1))
    h.events(session: 5, first: 1, [(.joined, Self.room, H.otherUser)])
    let mark = h.mark
    h.accept(resumed: false, session: 5)
    #expect(h.sentMessages(since: mark) == [])
    h.events(session: 5, first: 2, [(.left, Self.room, H.otherUser)])
    #expect(
      h.mainNotifications(since: mark) == [
        .memberLeft(channel: Self.room.bytes[...], userID: H.otherUser.bytes[...])
      ])
  }

  @Test func memberEvents_deliveredOnceInOrder_aGapWaitsForTheResend() throws {
    var h = H.connected()
    try h.join()
    let bob = H.otherUser
    let carol = try UserID(validating: Array("carol".utf8))
    h.events(first: 1, [(.joined, Self.room, bob)])
    h.events(first: 1, [(.joined, Self.room, bob), (.joined, Self.room, carol)])
    h.events(first: 4, [(.left, Self.room, carol)])  // 3 is missing
    #expect(h.session.counters.eventsOutOfOrder == 1)
    h.events(first: 3, [(.left, Self.room, bob), (.left, Self.room, carol)])
    let delivered = h.mainNotifications().filter {
      switch $0 {
      case .memberJoined, .memberLeft: true
      default: false
      }
    }
    let room = Self.room.bytes[...]
    #expect(
      delivered == [
        .memberJoined(channel: room, userID: bob.bytes[...]),
        .memberJoined(channel: room, userID: carol.bytes[...]),
        .memberLeft(channel: room, userID: bob.bytes[...]),
        .memberLeft(channel: room, userID: carol.bytes[...]),
      ])
    let mark = h.mark
    h.run(for: .seconds(1))
    #expect(h.sentMessages(since: mark).first == .loginHeartbeat(sequence: 1, eventsReceived: 4))
  }

  @Test func packetsWithAnotherCookie_orOutOfPlace_changeNothing() throws {
    var h = H.connected()
    let mark = h.mark
    h.deliver(.kick(.remoteLogin), cookie: h.cookie ^ 1)
    h.deliver(.loginRefuse(code: 5))  // only a login being made can be refused
    h.deliver(.kick(.sameUID))
    h.deliver(.accept(JoinAccept(uid: 1, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false)))
    #expect(h.mainNotifications(since: mark) == [])
    #expect(h.state == .connected)
    #expect(h.session.counters.foreign == 1 && h.session.counters.unexpected == 3)
  }
}
