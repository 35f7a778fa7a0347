// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// The login profile end to end: the C host examples/messaging (the Embedded library, as a
/// C program links it) against the real tether-edge on loopback, through a relay that can
/// cut a host's link, every threshold scaled by `scale` (the edge's grace with it).
@Suite(.serialized, Lab.enabled) struct LoginEndToEndTests {
  let scale = 0.05
  var interrupted: Double { 4 * scale }
  var grace: Double { 30 * scale }
  var retryCap: Double { 8 * scale }
  /// Generous: the machine is shared.
  let slack = 0.25

  /// tether-edge, a relay, and alice (link 0) then bob (link 1) through it, each logged in
  /// and in "lobby", alice having seen bob join.
  func twoInLobbyThroughARelay() throws -> (
    EdgeProcess, Relay, MessagingProcess, MessagingProcess
  ) {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 2, edgePort: edge.port)
    let alice = try Lab.messaging(
      "A", edge: edge, relay: relay, index: 0, user: "alice", scale: scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(alice.waitFor("join-channel lobby rc=0") != nil)
    let bob = try Lab.messaging("B", edge: edge, relay: relay, index: 1, user: "bob", scale: scale)
    #expect(bob.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(bob.waitFor("join-channel lobby rc=0") != nil)
    #expect(alice.waitFor("member-joined channel=lobby user=bob") != nil)
    return (edge, relay, alice, bob)
  }

  @Test func login_thenLogout_resultsAndStatesInOrder() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let alice = try Lab.messaging("A", edge: edge, user: "alice", scale: scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(alice.logout() == 0)
    #expect(alice.reaches("DISCONNECTED", "LOGOUT"))
    #expect(
      alice.states == [
        "CONNECTING LOGIN", "CONNECTED LOGIN_SUCCESS", "DISCONNECTED LOGOUT",
      ])
    let texts = alice.lines.map(\.text)
    let result = try #require(texts.firstIndex { $0.contains("login-result LOGIN_ERR_OK") })
    let connected = try #require(texts.firstIndex { $0.contains("state CONNECTED") })
    #expect(result < connected)
    #expect(texts.contains { $0.contains("logout-result LOGOUT_ERR_OK") })
  }

  @Test func refusals_invalidToken_invalidAppID_expiredToken_loginFailure() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let forged = try Lab.messaging(
      "forged", edge: edge, user: "alice", token: "forged", scale: scale)
    #expect(forged.waitFor("login-result LOGIN_ERR_INVALID_TOKEN") != nil)
    #expect(forged.reaches("DISCONNECTED", "LOGIN_FAILURE"))
    let stranger = try Lab.messaging(
      "stranger", edge: edge, user: "alice", appID: "other-app", scale: scale)
    #expect(stranger.waitFor("login-result LOGIN_ERR_INVALID_APP_ID") != nil)
    let staleToken = try edge.token(userID: "alice", expireSeconds: 1)
    Thread.sleep(forTimeInterval: 2.1)
    let stale = try Lab.messaging(
      "stale", edge: edge, user: "alice", token: staleToken, scale: scale)
    #expect(stale.waitFor("login-result LOGIN_ERR_TOKEN_EXPIRED") != nil)
    #expect(stale.reaches("DISCONNECTED", "LOGIN_FAILURE"))
    // A token for another user id does not verify for this one.
    let wrongUser = try Lab.messaging(
      "wrong-user", edge: edge, user: "alice",
      token: try edge.token(userID: "bob", expireSeconds: 60),
      scale: scale)
    #expect(wrongUser.waitFor("login-result LOGIN_ERR_INVALID_TOKEN") != nil)
  }

  @Test func noServer_loginTimesOut_atTheScaledTimeout() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 1, edgePort: edge.port)
    defer { relay.stop() }
    relay.cut(0)
    let alice = try Lab.messaging("A", edge: edge, relay: relay, user: "alice", scale: scale)
    let login = try #require(alice.waitForState("CONNECTING", "LOGIN"))
    let timeout = try #require(alice.waitFor("login-result LOGIN_ERR_TIMEOUT"))
    #expect(timeout.time >= login.time + 6 * scale - 0.005)
    #expect(timeout.time <= login.time + 6 * scale + slack)
    #expect(alice.reaches("DISCONNECTED", "LOGIN_TIMEOUT"))
  }

  @Test func cut_interruptedFromTheLastAnswer_thenBack_withoutASecondLoginResult() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 1, edgePort: edge.port)
    defer { relay.stop() }
    let alice = try Lab.messaging("A", edge: edge, relay: relay, user: "alice", scale: scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    relay.cut(0)
    try alice.expectInterrupted(
      interrupted, afterLastAnswerThrough: relay, early: 0.005, late: slack)
    usleep(UInt32(5 * self.interrupted * 1e6))
    #expect(alice.states.last == "RECONNECTING INTERRUPTED")
    relay.heal(0)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", from: alice.lines.count - 1))
    #expect(alice.lines.filter { $0.text.contains("login-result") }.count == 1)
  }

  @Test func uplinkOnly_interruptedToo() throws {
    let (edge, relay, alice, _) = try twoInLobbyThroughARelay()
    defer {
      relay.stop()
      edge.stop()
    }
    relay.cutUplink(0)
    try alice.expectInterrupted(
      interrupted, afterLastAnswerThrough: relay, early: 0.005, late: slack)
    relay.heal(0)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", from: alice.lines.count - 1))
  }

  /// Back just before the grace ends: the others see nothing. Just after: member-left,
  /// then member-joined once the user is back and has re-joined its channel by itself.
  @Test func graceBoundary_backJustBefore_nothing_backJustAfter_leftThenJoined() throws {
    let (edge, relay, alice, bob) = try twoInLobbyThroughARelay()
    defer {
      relay.stop()
      edge.stop()
    }

    // Just before: healed at 70 % of the grace after the server last heard alice.
    let bobBefore = bob.lines.count
    relay.cut(0)
    let lastFrom = try #require(relay.lastFromDevice(0))
    usleep(UInt32(max(0, lastFrom + 0.7 * grace - monotonicSeconds()) * 1e6))
    relay.heal(0)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", from: 3))
    usleep(UInt32(grace * 1e6))
    #expect(bob.first("member-", from: bobBefore) == nil)

    // Just after: healed at 130 % of the grace.
    let aliceBefore = alice.lines.count
    relay.cut(0)
    let lastFromLong = try #require(relay.lastFromDevice(0))
    let left = try #require(bob.waitFor("member-left channel=lobby user=alice", from: bobBefore))
    #expect(left.time >= lastFromLong + grace - 0.005)
    #expect(left.time <= lastFromLong + grace + slack)
    usleep(UInt32(max(0, lastFromLong + 1.3 * grace - monotonicSeconds()) * 1e6))
    relay.heal(0)
    let healAt = monotonicSeconds()
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", from: aliceBefore))
    let joined = try #require(
      bob.waitFor("member-joined channel=lobby user=alice", from: bobBefore))
    #expect(
      joined.time >= healAt && joined.time <= healAt + retryCap + slack,
      "member-joined \(ms(joined.time - healAt)) after the heal (retry cap \(ms(retryCap)))")
    // alice was never told to join again: her host joined once, the core did the rest.
    #expect(alice.lines.filter { $0.text.contains("join-channel lobby") }.count == 1)
  }

  @Test func sameUserElsewhere_abortsTheFirst_remoteLogin_andTheOthersSeeItMove() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let first = try Lab.messaging("A1", edge: edge, user: "alice", scale: scale)
    #expect(first.reaches("CONNECTED", "LOGIN_SUCCESS"))
    let bob = try Lab.messaging("B", edge: edge, user: "bob", scale: scale)
    #expect(bob.waitFor("join-channel lobby rc=0") != nil)
    let second = try Lab.messaging("A2", edge: edge, user: "alice", scale: scale)
    #expect(second.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(first.reaches("ABORTED", "REMOTE_LOGIN"))
    #expect(bob.waitFor("member-left channel=lobby user=alice") != nil)
    #expect(bob.waitFor("member-joined channel=lobby user=alice") != nil)
    // From ABORTED only logout applies.
    #expect(first.logout() == 0)
    #expect(first.reaches("DISCONNECTED", "LOGOUT"))
    #expect(first.states.suffix(2) == ["ABORTED REMOTE_LOGIN", "DISCONNECTED LOGOUT"])
  }

  @Test func ban_byTheAdminCommand_abortsBanned_thenLoginIsNotAuthorized() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let alice = try Lab.messaging("A", edge: edge, user: "alice", scale: scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(try edge.kick(userID: "alice", banSeconds: 60).status == 0)
    #expect(alice.reaches("ABORTED", "BANNED_BY_SERVER"))
    let again = try Lab.messaging("A-again", edge: edge, user: "alice", scale: scale)
    #expect(again.waitFor("login-result LOGIN_ERR_NOT_AUTHORIZED") != nil)
    #expect(again.reaches("DISCONNECTED", "LOGIN_FAILURE"))
  }

  @Test func tokenExpiry_whileReconnecting_isReported_withoutAStateChange() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 1, edgePort: edge.port)
    defer { relay.stop() }
    // Token expiries are wall-clock seconds (not scaled): 2 s.
    let alice = try Lab.messaging(
      "A", edge: edge, relay: relay, user: "alice", expireSeconds: 2, scale: scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    relay.cut(0)
    #expect(alice.reaches("RECONNECTING", "INTERRUPTED"))
    let expired = try #require(alice.waitFor("token-expired", timeout: 5))
    let statesAfter = alice.lines.filter { $0.time > expired.time && $0.text.contains(" state ") }
    usleep(300_000)
    #expect(statesAfter.isEmpty)
    #expect(alice.states.last == "RECONNECTING INTERRUPTED")
  }

  @Test func logout_tellsTheOthersAtOnce() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let alice = try Lab.messaging("A", edge: edge, user: "alice", scale: scale)
    let bob = try Lab.messaging("B", edge: edge, user: "bob", scale: scale)
    #expect(alice.waitFor("join-channel lobby rc=0") != nil)
    #expect(bob.waitFor("join-channel lobby rc=0") != nil)
    let start = monotonicSeconds()
    #expect(alice.logout() == 0)
    let left = try #require(bob.waitFor("member-left channel=lobby user=alice"))
    #expect(left.time - start < grace / 2)
  }
}
