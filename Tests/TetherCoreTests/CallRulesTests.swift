// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@_spi(Link) @testable import TetherCore

/// docs/BEHAVIOUR.md §1.6: what each call accepts, refuses and changes.
@Suite struct CallRulesTests {
  // MARK: - Channel names

  @Test func channelName_acceptsEveryAllowedByte_andLengths1to63() throws {
    let allowed = Array(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$%&()+-:;<=.>?@[]^_{}|~,"
        .utf8)
    for byte in allowed { _ = try ChannelName(validating: [byte]) }
    _ = try ChannelName(validating: Array(repeating: UInt8(ascii: "a"), count: 63))
  }

  @Test func channelName_refusesEveryOtherByte_withMinus102() {
    let allowed = Set(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$%&()+-:;<=.>?@[]^_{}|~,"
        .utf8)
    for byte in UInt8.min...UInt8.max where !allowed.contains(byte) {
      #expect(throws: TetherError.invalidChannelName) { try ChannelName(validating: [0x61, byte]) }
    }
    #expect(TetherError.invalidChannelName.rawValue == -102)
  }

  @Test func channelName_refusesEmptyAndOver63Bytes() {
    #expect(throws: TetherError.invalidChannelName) { try ChannelName(validating: []) }
    #expect(throws: TetherError.invalidChannelName) {
      try ChannelName(validating: Array(repeating: UInt8(ascii: "a"), count: 64))
    }
  }

  @Test func channelName_refusesNonASCIIUTF8() {
    #expect(throws: TetherError.invalidChannelName) {
      try ChannelName(validating: Array("café".utf8))
    }
  }

  // MARK: - Tokens and app ids

  @Test func token_acceptsEmptyAndPrintableUpTo512_refusesTheRest() throws {
    _ = try Token(validating: [])
    _ = try Token(validating: Array(repeating: UInt8(ascii: "x"), count: 512))
    #expect(throws: TetherError.invalidToken) {
      try Token(validating: Array(repeating: 0x78, count: 513))
    }
    for bad: UInt8 in [0, 0x20, 0x7F, 0x80, 0xFF] {
      #expect(throws: TetherError.invalidToken) { try Token(validating: [0x61, bad]) }
    }
  }

  @Test func appID_refusesEmptyLongAndUnprintable_withMinus101() {
    #expect(throws: TetherError.invalidAppID) { try AppID(validating: []) }
    #expect(throws: TetherError.invalidAppID) {
      try AppID(validating: Array(repeating: 0x61, count: 65))
    }
    #expect(throws: TetherError.invalidAppID) { try AppID(validating: Array("a b".utf8)) }
  }

  // MARK: - Config

  @Test func config_refusesZeroThresholdsAndACapBelowTheBase() {
    var zero = Fixture.config
    zero.heartbeatInterval = .zero
    #expect(throws: TetherError.invalidArgument) {
      try ChannelSession(config: zero, random: SeededRandom(seed: 1))
    }
    var cap = Fixture.config
    cap.retry = RetryPolicy(base: .ms(500), cap: .ms(100))
    #expect(throws: TetherError.invalidArgument) { try cap.validate() }
    var slowBeat = Fixture.config
    slowBeat.heartbeatInterval = slowBeat.interruptedAfter
    #expect(throws: TetherError.invalidArgument) { try slowBeat.validate() }
    #expect(throws: Never.self) { try Fixture.config.validate() }
  }

  @Test func config_refusesThresholdsOutOfTheTimelinesOrder_andNoWarningBeforeExpiry() {
    var lostFirst = Fixture.config
    lostFirst.lostAfter = Interval(nanoseconds: lostFirst.interruptedAfter.nanoseconds - 1)
    #expect(throws: TetherError.invalidArgument) { try lostFirst.validate() }
    var giveUpFirst = Fixture.config
    giveUpFirst.giveUpAfter = Interval(nanoseconds: giveUpFirst.lostAfter.nanoseconds - 1)
    #expect(throws: TetherError.invalidArgument) { try giveUpFirst.validate() }
    var droppedFirst = Fixture.config
    droppedFirst.remoteOfflineAfter = Interval(
      nanoseconds: droppedFirst.interruptedAfter.nanoseconds - 1)
    #expect(throws: TetherError.invalidArgument) { try droppedFirst.validate() }
    var noWarning = Fixture.config
    noWarning.tokenWillExpireBefore = .zero
    #expect(throws: TetherError.invalidArgument) { try noWarning.validate() }
    // Equal thresholds are a timeline, only a degenerate one: accepted.
    var equal = Fixture.config
    equal.lostAfter = equal.interruptedAfter
    equal.giveUpAfter = equal.lostAfter
    equal.remoteOfflineAfter = equal.interruptedAfter
    #expect(throws: Never.self) { try equal.validate() }
  }

  @Test func config_defaultsAreTheSpecs() {
    let c = Fixture.config
    #expect(c.interruptedAfter == .ms(4000))
    #expect(c.lostAfter == .ms(10_000))
    #expect(c.remoteOfflineAfter == .ms(20_000))
    #expect(c.giveUpAfter == .ms(1_200_000))
    #expect(c.tokenWillExpireBefore == .ms(30_000))
    #expect(c.heartbeatInterval == .ms(1000))
  }

  // MARK: - join

  @Test func join_acceptsEveryUID_zeroIncluded() throws {
    for uid: UInt32 in [0, 1, 0x7FFF_FFFF, .max] {
      var h = Harness()
      try h.join(uid: uid)
      #expect(h.joins().first?.request.uid == uid)
    }
  }

  @Test func join_whenNotDisconnected_isRefusedWithMinus17_andChangesNothing() throws {
    var connecting = Harness()
    try connecting.join()
    let connected = Harness.connected()
    var reconnecting = Harness.connected()
    reconnecting.run(for: .ms(5000))
    var failed = Harness.connected()
    failed.deliver(.kick(.banned))
    for var h in [connecting, connected, reconnecting, failed] {
      let before = (h.state, h.reason, h.log.count, h.sent.count, h.session.nextDeadline)
      #expect(throws: TetherError.joinChannelRejected) { try h.join(uid: 9) }
      #expect(before.0 == h.state && before.1 == h.reason)
      #expect(before.2 == h.log.count && before.3 == h.sent.count)
      #expect(before.4 == h.session.nextDeadline)
    }
    _ = connected.state
  }

  @Test func join_usesAFreshCookieEachTime() throws {
    var h = Harness()
    try h.join()
    let first = h.cookie
    h.leave()
    try h.join()
    #expect(h.cookie != first)
    #expect(h.cookie != 0)
  }

  // MARK: - leave

  @Test func leave_whenDisconnected_isANoOp() {
    var h = Harness()
    h.leave()
    h.leave()
    #expect(h.log.isEmpty && h.sent.isEmpty)
  }

  @Test func leave_isImmediateFromEveryState_andIdempotent() throws {
    var connecting = Harness()
    try connecting.join()
    var reconnecting = Harness.connected()
    reconnecting.run(for: .ms(12_000))
    var failed = Harness.connected()
    failed.deliver(.kick(.sameUID))
    for var h in [connecting, Harness.connected(), reconnecting, failed] {
      let wasFailed = h.state == .failed
      let mark = h.mark
      h.leave()
      #expect(h.state == .disconnected)
      #expect(
        h.mainNotifications(since: mark) == [
          .connectionStateChanged(.disconnected, .leaveChannel), .leaveChannel,
        ])
      #expect(h.sentMessages(since: mark) == (wasFailed ? [] : [.leave, .leave]))
      #expect(h.session.nextDeadline == nil)
      let again = h.mark
      h.leave()
      #expect(h.mainNotifications(since: again).isEmpty)
    }
  }

  // MARK: - renew_token

  @Test func renewToken_whenDisconnected_isNotReady() {
    var h = Harness()
    #expect(throws: TetherError.notReady) { try h.renew() }
  }

  @Test func renewToken_whenFailedForAnotherReason_isNotReady() {
    var h = Harness.connected()
    h.deliver(.kick(.banned))
    #expect(throws: TetherError.notReady) { try h.renew() }
    #expect(h.state == .failed)
  }

  @Test func renewToken_whenConnected_refreshesSilently_andTakesTheNewExpiry() throws {
    var h = Harness.connected(tokenTimeLeftMs: 60_000)
    let mark = h.mark
    try h.renew(Fixture.token2)
    #expect(h.sentMessages(since: mark) == [.renewToken(Fixture.token2)])
    #expect(h.mainNotifications(since: mark).isEmpty)
    #expect(h.session.tokenExpiresAt == nil)
    h.deliver(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000)))
    #expect(h.session.tokenExpiresAt == h.now + .seconds(3600))
    #expect(h.state == .connected)
  }

  @Test func renewToken_isResentWithHeartbeats_untilAnswered() throws {
    var h = Harness.connected()
    try h.renew(Fixture.token2)
    let mark = h.mark
    h.run(for: .ms(2100))
    let renewals = h.sentMessages(since: mark).filter { $0 == .renewToken(Fixture.token2) }
    #expect(renewals.count == 2)
    h.deliver(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 0)))
    let after = h.mark
    h.run(for: .ms(2000))
    #expect(!h.sentMessages(since: after).contains(.renewToken(Fixture.token2)))
  }

  @Test func renewToken_refusedByTheServer_restoresTheOldToken_andRequestsAnother() throws {
    var h = Harness.connected(tokenTimeLeftMs: 60_000)
    let expiry = h.session.tokenExpiresAt
    try h.renew(Fixture.token2)
    let mark = h.mark
    h.deliver(.tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0)))
    #expect(h.mainNotifications(since: mark) == [.requestToken])
    #expect(h.session.tokenExpiresAt == expiry)
    h.run(for: .ms(5000))  // the next rejoin uses the old token
    #expect(h.joins().last?.request.token == Fixture.token)
  }

  @Test func renewToken_whileReconnecting_isUsedByTheNextJoin() throws {
    var h = Harness.connected()
    h.run(for: .ms(5000))
    try h.renew(Fixture.token2)
    let mark = h.mark
    h.run(for: .ms(10_000))
    #expect(!h.joins(since: mark).isEmpty)
    #expect(h.joins(since: mark).allSatisfy { $0.token == Fixture.token2 })
  }

  @Test func renewToken_whileReconnecting_theKnownExpiryStillReported_withoutFailing() throws {
    var h = Harness.connected(tokenTimeLeftMs: 60_000)
    let accepted = h.now
    h.run(until: accepted + .ms(5000))  // INTERRUPTED at 4 s; the link stays down
    try h.renew(Fixture.token2)
    h.run(until: accepted + .ms(70_000))
    #expect(h.time(of: .requestToken) == accepted + .ms(60_000))
    #expect(h.notifications.filter { $0 == .requestToken }.count == 1)
    #expect(h.state == .reconnecting)
    #expect(!h.notifications.contains(.tokenPrivilegeWillExpire(Fixture.token)))
    #expect(
      h.joins(since: accepted + .ms(60_001)).allSatisfy { $0.request.token == Fixture.token2 })
    // The server takes the new token: its own expiry from now on.
    h.accept(tokenTimeLeftMs: 60_000)
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
    #expect(h.session.tokenExpiresAt == h.now + .ms(60_000))
  }

  /// Found by the channel scenarios (`make soak`, seeds 26609, 31200, 40213): the ACCEPT of
  /// the JOIN sent with the old token came first, the client took its time left, and the
  /// later RESUMED ACCEPT of the retry with the new token (not wanted once CONNECTED) was
  /// lost on it: FAILED/TOKEN_EXPIRED at the old token's expiry, while the server held the
  /// session with the new one. No ACCEPT says which token it took: the new one goes in a
  /// RENEW_TOKEN, and the answer decides.
  @Test func renewToken_whileConnecting_theOldTokensAcceptFirst_theNewOneIsRenewed() throws {
    var h = Harness()
    try h.join()  // a JOIN with the old token
    try h.renew(Fixture.token2)
    h.run(for: .ms(1000))  // a retry with the new one
    #expect(h.joins().last?.request.token == Fixture.token2)
    let mark = h.mark
    let acceptedAt = h.now
    h.accept(tokenTimeLeftMs: 3000)  // the old JOIN's: 3 s left
    h.deliver(
      .accept(JoinAccept(uid: 42, serverTimeMs: 0, tokenTimeLeftMs: 3_600_000, resumed: true)))
    #expect(h.sentMessages(since: mark) == [.renewToken(Fixture.token2)])
    h.deliver(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000)))
    h.run(for: .seconds(5), answering: true)
    #expect(h.state == .connected)
    #expect(!h.notifications.contains(.requestToken))
    #expect(h.session.tokenExpiresAt == acceptedAt + .seconds(3600))
  }

  /// As above, with no JOIN of the new token sent before the accept; and the old token's
  /// expiry passing before the server's answer is reported without failing (the server
  /// decides: had it kept the old token, its TOKEN_EXPIRED ends the session).
  @Test func renewToken_whileConnecting_acceptBeforeAnyNewJoin_renewsIt_expiryReportedOnly()
    throws
  {
    var h = Harness()
    try h.join()
    h.run(for: .ms(50))
    try h.renew(Fixture.token2)
    #expect(h.joins().allSatisfy { $0.request.token == Fixture.token })
    let mark = h.mark
    h.accept(tokenTimeLeftMs: 3000)
    #expect(h.sentMessages(since: mark) == [.renewToken(Fixture.token2)])
    h.run(for: .ms(3500), answering: true)
    #expect(h.state == .connected)
    #expect(h.mainNotifications(since: mark).filter { $0 == .requestToken }.count == 1)
    #expect(h.sentMessages(since: mark).filter { $0 == .renewToken(Fixture.token2) }.count == 4)
    h.deliver(.tokenExpired)
    #expect(h.state == .failed && h.reason == .tokenExpired)
  }

  /// A renewal refused after such an accept goes back to the old token, with the accept's
  /// expiry.
  @Test func renewToken_whileConnecting_refusedAfterTheAccept_restoresTheOldToken() throws {
    var h = Harness()
    try h.join()
    try h.renew(Fixture.token2)
    h.accept(tokenTimeLeftMs: 60_000)
    let expiry = h.session.tokenExpiresAt
    h.deliver(.tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0)))
    #expect(h.session.link.token == Fixture.token)
    #expect(h.session.tokenExpiresAt == expiry && expiry != nil)
    #expect(h.notifications.last == .requestToken)
  }

  /// A rejoin whose every JOIN carried the renewed token settles the RENEW_TOKEN out (the
  /// same rule as the login's: LoginSessionTests).
  @Test func renewToken_whileConnected_aRejoinWithTheNewTokenSettlesIt() throws {
    var h = Harness.connected(tokenTimeLeftMs: 3_600_000)
    try h.renew(Fixture.token2)
    h.run(for: .ms(4100))
    #expect(h.state == .reconnecting)
    #expect(h.joins().last?.request.token == Fixture.token2)
    h.accept(tokenTimeLeftMs: 3_600_000)
    let mark = h.mark
    h.run(for: .ms(2100), answering: true)
    #expect(!h.sentMessages(since: mark).contains(.renewToken(Fixture.token2)))
    #expect(h.session.tokenExpiresAt == h.now - .ms(2100) + .seconds(3600))
  }

  // MARK: - Packets the session does not expect

  @Test func packets_withAForeignCookie_orClientTypes_orMalformed_changeNothing() {
    var h = Harness.connected()
    let mark = h.mark
    h.deliver(.sessionUnknown, cookie: 12345)
    h.deliver(.heartbeat(sequence: 1))
    h.step { s, now, out in _ = s.receive(datagram: [0x54, 0x48, 1][...], now: now, into: &out) }
    #expect(h.mainNotifications(since: mark).isEmpty)
    #expect(
      h.session.counters
        == ChannelCounters(malformed: 1, foreign: 1, unexpected: 1, joinAttempts: 1))
  }

  /// KICK REMOTE_LOGIN ends a login session taken over by another login of its user id:
  /// the login profile's, so a channel session counts it and goes on (SAME_UID_LOGIN is a
  /// channel's takeover, KICK SAME_UID).
  @Test func kickRemoteLogin_isTheLoginProfiles_countedAndIgnored() {
    var h = Harness.connected()
    let mark = h.mark
    h.deliver(.kick(.remoteLogin))
    #expect(h.state == .connected && h.mainNotifications(since: mark).isEmpty)
    #expect(h.session.counters.unexpected == 1)
    h.deliver(.kick(.sameUID))
    #expect(h.state == .failed && h.reason == .sameUIDLogin)
  }

  @Test func time_runningBackwards_isClampedNotTrusted() {
    var h = Harness.connected()
    h.run(for: .ms(3000))
    h.now = .zero
    h.step { s, now, out in s.advance(to: now, into: &out) }
    #expect(h.state == .connected)
    #expect((h.session.nextDeadline ?? .zero) > .ms(3000))
  }
}
