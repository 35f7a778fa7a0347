// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// One test per row of docs/BEHAVIOUR.md §1's reason table that a client can reach: the state it
/// goes with, the callbacks, and their order.
@Suite struct ReasonTableTests {
  typealias N = ChannelNotification

  // MARK: - The table itself

  @Test func everyReason_goesWithTheStateSpecGives() {
    let spec: [(Int32, ConnectionState, String)] = [
      (0, .connecting, "CONNECTING"), (1, .connected, "JOIN_SUCCESS"),
      (2, .reconnecting, "INTERRUPTED"), (3, .failed, "BANNED_BY_SERVER"),
      (4, .failed, "JOIN_FAILED"), (5, .disconnected, "LEAVE_CHANNEL"),
      (6, .failed, "INVALID_APP_ID"), (7, .failed, "INVALID_CHANNEL_NAME"),
      (8, .disconnected, "INVALID_TOKEN"), (9, .failed, "TOKEN_EXPIRED"),
      (10, .failed, "REJECTED_BY_SERVER"), (11, .reconnecting, "SETTING_PROXY_SERVER"),
      (12, .reconnecting, "RENEW_TOKEN"), (13, .reconnecting, "CLIENT_IP_ADDRESS_CHANGED"),
      (14, .reconnecting, "KEEP_ALIVE_TIMEOUT"), (15, .connected, "REJOIN_SUCCESS"),
      (16, .reconnecting, "LOST"), (18, .reconnecting, "CLIENT_IP_ADDRESS_CHANGED_BY_USER"),
      (19, .failed, "SAME_UID_LOGIN"),
    ]
    #expect(ConnectionChangedReason.allCases.count == spec.count)
    for (value, state, name) in spec {
      let reason = ConnectionChangedReason(rawValue: value)
      #expect(reason?.state == state, "reason \(value)")
      #expect(reason.map { "\($0.name)" } == name)
    }
    for reserved: Int32 in [17, 20, 21, 22, 23, 24] {
      #expect(ConnectionChangedReason(rawValue: reserved) == nil, "reserved \(reserved)")
    }
  }

  // MARK: - CONNECTING (0), JOIN_SUCCESS (1)

  @Test func connecting_whenJoinIsCalled_andAJoinGoesOutAtOnce() throws {
    var h = Harness()
    try h.join(uid: 7)
    #expect(h.mainNotifications == [.connectionStateChanged(.connecting, .connecting)])
    #expect(h.joins().count == 1)
    #expect(h.joins().first?.request.uid == 7)
    #expect(h.joins().first?.request.isRejoin == false)
    #expect(h.session.retryStatus?.attempt == 1)
  }

  @Test func joinSuccess_whenServerAccepts_thenJoinCallbackWithElapsedTime() throws {
    var h = Harness()
    try h.join(uid: 0)
    h.run(for: .ms(200))
    h.accept(uid: 4242)
    #expect(
      h.mainNotifications == [
        .connectionStateChanged(.connecting, .connecting),
        .connectionStateChanged(.connected, .joinSuccess),
        .joinChannelSuccess(channel: Fixture.channel, uid: 4242, elapsedMs: 200),
      ])
    #expect(h.session.uid == 4242)
    #expect(h.session.retryStatus == nil)
  }

  // MARK: - INTERRUPTED (2), LOST (16), REJOIN_SUCCESS (15), JOIN_FAILED (4)

  @Test func interrupted_whenConnected_andNoDataFor4s() {
    var h = Harness.connected()
    let lastData = h.now
    h.run(until: lastData + .ms(3999))
    #expect(h.state == .connected)
    h.run(until: lastData + .ms(4000))
    #expect(
      h.time(of: .connectionStateChanged(.reconnecting, .interrupted)) == lastData + .ms(4000))
    let rejoin = h.joins(since: lastData + .ms(4000))
    #expect(rejoin.count == 1)
    #expect(rejoin.first?.request.isRejoin == true)
    #expect(rejoin.first?.request.uid == 42)
  }

  @Test func interrupted_isPostponed_byEveryPacketOfTheSession() {
    var h = Harness.connected()
    for _ in 0..<10 {
      h.run(for: .ms(3000))
      h.deliver(.heartbeatAck(sequence: 1, serverTimeMs: 0))
    }
    #expect(h.state == .connected)
    h.run(for: .ms(4000))
    #expect(h.state == .reconnecting)
  }

  @Test func lost_whenStillNoData10sAfterTheLast_thenConnectionLost() {
    var h = Harness.connected()
    let lastData = h.now
    h.run(until: lastData + .ms(10_000))
    let after = h.mainNotifications(since: lastData + .ms(10_000))
    #expect(after == [.connectionStateChanged(.reconnecting, .lost), .connectionLost])
    #expect(h.time(of: .connectionLost) == lastData + .ms(10_000))
    // Rejoining goes on after LOST.
    h.run(for: .ms(30_000))
    #expect(h.joins(since: lastData + .ms(10_001)).count >= 3)
  }

  @Test func rejoinSuccess_whenARejoinIsAccepted_afterAnInterruption() {
    var h = Harness.connected()
    h.run(for: .ms(6000))
    #expect(h.state == .reconnecting)
    let before = h.mark
    h.accept(uid: 42)
    #expect(
      h.mainNotifications(since: before) == [
        .connectionStateChanged(.connected, .rejoinSuccess),
        .rejoinChannelSuccess(channel: Fixture.channel, uid: 42, elapsedMs: 6200),
      ])
    #expect(h.session.retryStatus == nil)
  }

  @Test func joinFailed_whenNoRejoinSucceedsFor20min_andRetriesStop() {
    var h = Harness.connected()
    let lastData = h.now
    h.run(until: lastData + .seconds(1200) - .ms(1))
    #expect(h.state == .reconnecting)
    h.run(until: lastData + .seconds(1200))
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .joinFailed))
    #expect(h.time(of: .connectionStateChanged(.failed, .joinFailed)) == lastData + .seconds(1200))
    #expect(h.session.nextDeadline == nil)
    let sentBefore = h.sent.count
    h.run(for: .seconds(3600))
    #expect(h.sent.count == sentBefore)
  }

  @Test func joinFailed_whenTheFirstJoinNeverGetsThrough_afterConnectionLostAt10s() throws {
    var h = Harness()
    try h.join()
    h.run(until: .ms(10_000))
    #expect(h.state == .connecting)
    #expect(h.time(of: .connectionLost) == .ms(10_000))
    #expect(h.stateChanges == [.connectionStateChanged(.connecting, .connecting)])
    h.run(until: .s(1200))
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .joinFailed))
    #expect(h.time(of: .connectionStateChanged(.failed, .joinFailed)) == .s(1200))
  }

  // MARK: - BANNED_BY_SERVER (3), SAME_UID_LOGIN (19)

  @Test func bannedByServer_whenKicked_andNothingMoreIsSent() {
    var h = Harness.connected()
    h.deliver(.kick(.banned))
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .bannedByServer))
    #expect(h.session.nextDeadline == nil)
    let sentBefore = h.sent.count
    h.run(for: .seconds(60))
    #expect(h.sent.count == sentBefore)
  }

  @Test func sameUIDLogin_whenTheServerSaysAnotherClientTookTheUID() {
    var h = Harness.connected()
    h.deliver(.kick(.sameUID))
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .sameUIDLogin))
    #expect(h.session.nextDeadline == nil)
  }

  @Test func kick_withAForeignCookie_isIgnored() {
    var h = Harness.connected()
    h.deliver(.kick(.banned), cookie: h.cookie ^ 1)
    #expect(h.state == .connected)
    #expect(h.session.counters.foreign == 1)
  }

  // MARK: - LEAVE_CHANNEL (5)

  @Test func leaveChannel_fromConnected_sendsLeave_thenStateThenCallback_andNothingAfter() {
    var h = Harness.connected()
    let before = h.mark
    h.leave()
    #expect(
      h.mainNotifications(since: before) == [
        .connectionStateChanged(.disconnected, .leaveChannel), .leaveChannel,
      ])
    #expect(h.sentMessages(since: before) == [.leave, .leave])
    let logged = h.log.count
    h.run(for: .seconds(3600))
    h.accept()
    h.deliver(.kick(.banned))
    #expect(h.log.count == logged)
    #expect(h.session.nextDeadline == nil)
  }

  // MARK: - Refusals: INVALID_APP_ID (6), INVALID_CHANNEL_NAME (7), INVALID_TOKEN (8),
  // TOKEN_EXPIRED (9), REJECTED_BY_SERVER (10)

  @Test(arguments: [
    (RefuseReason.invalidAppID, ConnectionChangedReason.invalidAppID),
    (.invalidChannelName, .invalidChannelName), (.rejected, .rejectedByServer),
  ])
  func refusal_atJoin_fails(refusal: RefuseReason, reason: ConnectionChangedReason) throws {
    var h = Harness()
    try h.join()
    h.run(for: .ms(200))
    h.deliver(.refuse(refusal))
    #expect(
      h.mainNotifications == [
        .connectionStateChanged(.connecting, .connecting), .connectionStateChanged(.failed, reason),
      ])
    #expect(h.session.nextDeadline == nil)
  }

  @Test func invalidToken_atJoin_disconnects_andJoinWorksAgain() throws {
    var h = Harness()
    try h.join()
    h.deliver(.refuse(.invalidToken))
    #expect(h.stateChanges.last == .connectionStateChanged(.disconnected, .invalidToken))
    #expect(h.session.channel == nil)
    try h.join()
    #expect(h.state == .connecting)
  }

  @Test func tokenExpired_atJoin_requestsToken_thenFails() throws {
    var h = Harness()
    try h.join()
    h.deliver(.refuse(.tokenExpired))
    #expect(
      h.mainNotifications == [
        .connectionStateChanged(.connecting, .connecting), .requestToken,
        .connectionStateChanged(.failed, .tokenExpired),
      ])
  }

  @Test func tokenExpired_atJoin_thenRenewed_endsInTheFirstJoinsSuccess_notARejoin() throws {
    var h = Harness()
    try h.join()
    h.deliver(.refuse(.tokenExpired))
    try h.renew(Fixture.token2)
    #expect(h.stateChanges.last == .connectionStateChanged(.reconnecting, .renewToken))
    #expect(h.joins().last?.request.isRejoin == false)
    let mark = h.mark
    h.accept(uid: 7)
    #expect(
      h.mainNotifications(since: mark) == [
        .connectionStateChanged(.connected, .joinSuccess),
        .joinChannelSuccess(channel: Fixture.channel, uid: 7, elapsedMs: 0),
      ])
    // A later interruption is a rejoin, as for any joined session.
    h.run(for: .ms(4500))
    #expect(h.joins().last?.request.isRejoin == true)
    h.accept(uid: 7)
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
  }

  @Test func tokenExpired_inTheChannel_warns30sBefore_thenRequestsToken_andFails() {
    var h = Harness.connected(tokenTimeLeftMs: 120_000)
    let accepted = h.now
    for n in 0..<200 {  // keep the link alive: heartbeats answered every second
      h.run(until: accepted + .ms(UInt64(n) * 1000 + 500))
      h.deliver(.heartbeatAck(sequence: 0, serverTimeMs: 0))
    }
    #expect(h.time(of: .tokenPrivilegeWillExpire(Fixture.token)) == accepted + .ms(90_000))
    #expect(h.time(of: .requestToken) == accepted + .ms(120_000))
    #expect(h.time(of: .connectionStateChanged(.failed, .tokenExpired)) == accepted + .ms(120_000))
    let tail = h.mainNotifications(since: accepted + .ms(120_000))
    #expect(tail == [.requestToken, .connectionStateChanged(.failed, .tokenExpired)])
  }

  @Test func tokenExpired_isReported_evenWhileReconnecting() {
    var h = Harness.connected(tokenTimeLeftMs: 30_000)
    let accepted = h.now
    h.run(until: accepted + .ms(30_000))
    #expect(
      h.time(of: .connectionStateChanged(.reconnecting, .interrupted)) == accepted + .ms(4000))
    #expect(h.time(of: .requestToken) == accepted + .ms(30_000))
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .tokenExpired))
  }

  @Test func tokenExpired_whenTheServerSaysSo() {
    var h = Harness.connected()
    h.deliver(.tokenExpired)
    #expect(
      h.mainNotifications.suffix(2) == [
        .requestToken, .connectionStateChanged(.failed, .tokenExpired),
      ])
  }

  // MARK: - SETTING_PROXY_SERVER (11), CLIENT_IP_ADDRESS_CHANGED (13, 18)

  @Test(arguments: [
    ConnectionChangedReason.settingProxyServer, .clientIPAddressChanged,
    .clientIPAddressChangedByUser,
  ])
  func reconnect_whenConnected_rejoinsAtOnce_thenRejoinSuccess(reason: ConnectionChangedReason) {
    var h = Harness.connected()
    h.run(for: .ms(500))
    let before = h.mark
    switch reason {
    case .settingProxyServer: h.endpointChanged()
    case .clientIPAddressChanged: h.networkChanged(byUser: false)
    default: h.networkChanged(byUser: true)
    }
    #expect(h.mainNotifications(since: before) == [.connectionStateChanged(.reconnecting, reason)])
    #expect(h.joins(since: before).count == 1)
    #expect(h.joins(since: before).first?.isRejoin == true)
    h.accept()
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
  }

  @Test func networkChange_whileConnecting_retriesAtOnce_withoutAStateChange() throws {
    var h = Harness()
    try h.join()
    h.run(for: .ms(100))
    h.networkChanged(byUser: true)
    #expect(h.stateChanges == [.connectionStateChanged(.connecting, .connecting)])
    #expect(h.joins().count == 2)
    #expect(h.session.retryStatus?.attempt == 1)
  }

  @Test func networkChange_whenDisconnectedOrFailed_doesNothing() {
    var idle = Harness()
    idle.networkChanged(byUser: false)
    idle.endpointChanged()
    #expect(idle.log.isEmpty && idle.sent.isEmpty)
    var failed = Harness.connected()
    failed.deliver(.kick(.banned))
    let logged = failed.log.count
    failed.networkChanged(byUser: true)
    #expect(failed.log.count == logged)
  }

  // MARK: - RENEW_TOKEN (12)

  @Test func renewToken_fromFailedTokenExpired_rejoinsWithTheNewToken() throws {
    var h = Harness.connected()
    h.deliver(.tokenExpired)
    let before = h.mark
    try h.renew(Fixture.token2)
    #expect(
      h.mainNotifications(since: before) == [.connectionStateChanged(.reconnecting, .renewToken)])
    #expect(h.joins(since: before).first?.token == Fixture.token2)
    h.accept(tokenTimeLeftMs: 3_600_000)
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
    #expect(h.session.tokenExpiresAt == h.now + .seconds(3600))
  }

  /// Found by the attacker end-to-end test (replaysAfterRenewal, channel): the device's own
  /// expiry deadline and the edge's TOKEN_EXPIRED notice fall due together; the app renews
  /// in request-token, and the notice, read next, is the old session's. It must not report
  /// the expiry a second time (request-token, FAILED, RECONNECTING again).
  @Test func renewToken_fromFailedTokenExpired_theOldSessionsLateNotice_changesNothing() throws {
    var h = Harness.connected()
    h.deliver(.tokenExpired)
    try h.renew(Fixture.token2)
    let before = h.mark
    h.deliver(.tokenExpired)
    #expect(h.mainNotifications(since: before) == [])
    #expect(h.state == .reconnecting)
    h.accept(tokenTimeLeftMs: 3_600_000)
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
    // Accepted with the new token: a TOKEN_EXPIRED now is the server's word on it again.
    h.deliver(.tokenExpired)
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .tokenExpired))
  }

  /// Renewed while reconnecting: a TOKEN_EXPIRED of the session the server held (the old
  /// token) does not fail the attempts that carry the new one.
  @Test func renewToken_whileReconnecting_theOldSessionsTokenExpired_doesNotFail() throws {
    var h = Harness.connected(tokenTimeLeftMs: 60_000)
    h.run(for: .ms(5000))  // INTERRUPTED at 4 s; the link stays down
    try h.renew(Fixture.token2)
    let before = h.mark
    h.deliver(.tokenExpired)
    #expect(h.mainNotifications(since: before) == [])
    #expect(h.state == .reconnecting)
    #expect(h.joins(since: before).allSatisfy { $0.token == Fixture.token2 })
  }

  /// Without a renewal, a TOKEN_EXPIRED while reconnecting still ends the attempts.
  @Test func tokenExpired_whileReconnecting_withoutRenewal_fails() {
    var h = Harness.connected()
    h.run(for: .ms(5000))
    #expect(h.state == .reconnecting)
    h.deliver(.tokenExpired)
    #expect(h.stateChanges.last == .connectionStateChanged(.failed, .tokenExpired))
  }

  // MARK: - KEEP_ALIVE_TIMEOUT (14)

  @Test func keepAliveTimeout_whenTheServerNoLongerKnowsTheSession_rejoins() {
    var h = Harness.connected()
    h.run(for: .ms(1500))
    let before = h.mark
    h.deliver(.sessionUnknown)
    #expect(
      h.mainNotifications(since: before) == [
        .connectionStateChanged(.reconnecting, .keepAliveTimeout)
      ])
    #expect(h.joins(since: before).count == 1)
    h.accept()
    #expect(h.stateChanges.last == .connectionStateChanged(.connected, .rejoinSuccess))
  }
}
