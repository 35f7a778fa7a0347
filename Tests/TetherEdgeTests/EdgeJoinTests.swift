// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// A channel join (version 2's handshake, docs/PROTOCOL.md §12.5 and §12.6), driven by real
/// client sessions: uid assignment, every refusal, resume, takeover, a new address, and a
/// server restart.
struct EdgeJoinTests {
  // MARK: - Accept

  @Test func join_uidZero_getsTheFirstFreeUidFrom1000000() throws {
    var world = World()
    let a = world.addClient()
    let b = world.addClient()
    let c = world.addClient()
    try world.join(a, uid: 1_000_000)
    try world.join(b)
    try world.join(c)
    #expect(world.clients[a].session.uid == 1_000_000)
    #expect(world.clients[b].session.uid == 1_000_001)
    #expect(world.clients[c].session.uid == 1_000_002)
    #expect(
      world.clients[b].stateChanges.last == .connectionStateChanged(.connected, .joinSuccess))
    #expect(world.server.members(of: Fixture.channel) == [1_000_000, 1_000_001, 1_000_002])
  }

  @Test func join_uidZero_inAnotherChannel_startsAgainAt1000000() throws {
    var world = World()
    let a = world.addClient()
    let b = world.addClient()
    try world.join(a, channel: "one")
    try world.join(b, channel: "two")
    #expect(world.clients[a].session.uid == 1_000_000)
    #expect(world.clients[b].session.uid == 1_000_000)
  }

  @Test func accept_carriesTheTokenTimeLeft_andNotResumed() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, uid: 5, token: world.token(uid: 5, expiresIn: 90))
    let accept = try #require(world.accepts(to: a).first)
    #expect(accept.uid == 5)
    #expect(accept.tokenTimeLeftMs == 90_000)
    #expect(!accept.resumed)
    #expect(world.clients[a].session.tokenExpiresAt == .s(90))
  }

  @Test func accept_tokenThatNeverExpires_hasTimeLeftZero() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, token: World.token(expiresAt: 0))
    #expect(world.accepts(to: a).first?.tokenTimeLeftMs == 0)
    #expect(world.clients[a].session.tokenExpiresAt == nil)
  }

  // MARK: - Refusals

  @Test func join_anotherAppID_isRefused_invalidAppID() throws {
    var world = World()
    let a = world.addClient(
      config: ChannelConfig(appID: try AppID(validating: Array("app-2".utf8))))
    try world.join(a)
    #expect(world.clients[a].lastState == .connectionStateChanged(.failed, .invalidAppID))
    #expect(world.server.sessionCount == 0)
  }

  @Test func join_channelStartingWithDollar_isRefused_invalidChannelName() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, channel: "$system")
    #expect(world.clients[a].lastState == .connectionStateChanged(.failed, .invalidChannelName))
    #expect(world.server.sessionCount == 0)
  }

  @Test func join_tokenForAnotherChannelOrUid_isRefused_invalidToken() throws {
    var world = World()
    let a = world.addClient()
    let b = world.addClient()
    let c = world.addClient()
    try world.join(a, token: world.token(channel: "other"))
    try world.join(b, uid: 8, token: world.token(uid: 7))
    try world.join(c, token: try Token(validating: Array("not-a-token".utf8)))
    for i in [a, b, c] {
      #expect(
        world.clients[i].lastState == .connectionStateChanged(.disconnected, .invalidToken))
    }
    #expect(world.server.sessionCount == 0)
    // a and b are refused at their INIT (REFUSE_SEALED, INVALID_TOKEN); c's text is no
    // version 2 token, which its device refuses itself: no INIT goes.
    #expect(world.server.counters.refusedHandshakes == 2)
  }

  @Test func join_expiredToken_isRefused_tokenExpired() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, token: World.token(expiresAt: World.wallBase))
    #expect(world.clients[a].notifications.contains(.requestToken))
    #expect(world.clients[a].lastState == .connectionStateChanged(.failed, .tokenExpired))
  }

  @Test func join_pastMaxSessions_isRefused_rejectedByServer() throws {
    var world = World(config: World.config(maxSessions: 2))
    for _ in 0..<3 { world.addClient() }
    try world.join(0)
    try world.join(1, channel: "other")
    try world.join(2)
    #expect(world.clients[1].lastState == .connectionStateChanged(.connected, .joinSuccess))
    #expect(world.clients[2].lastState == .connectionStateChanged(.failed, .rejectedByServer))
    #expect(world.server.sessionCount == 2)
  }

  // MARK: - Same uid

  @Test func join_sameUid_kicksTheFirst_sameUIDLogin_andMembersSeeNoLeave() throws {
    var world = World()
    let first = world.addClient()
    let second = world.addClient()
    let watcher = world.addClient()
    try world.join(first, uid: 7)
    try world.join(watcher)
    world.run(for: .seconds(2))
    try world.join(second, uid: 7)
    world.run(for: .seconds(25))
    #expect(world.clients[first].lastState == .connectionStateChanged(.failed, .sameUIDLogin))
    #expect(world.clients[second].lastState == .connectionStateChanged(.connected, .joinSuccess))
    let joinedSeven = world.clients[watcher].notifications.filter {
      if case .userJoined(7, _) = $0 { true } else { false }
    }
    #expect(joinedSeven.count == 1)
    #expect(
      !world.clients[watcher].notifications.contains {
        if case .userOffline = $0 { true } else { false }
      })
    #expect(world.server.members(of: Fixture.channel).count == 2)
  }

  @Test func join_sameUid_whenFull_stillTakesOver() throws {
    var world = World(config: World.config(maxSessions: 1))
    world.addClient()
    world.addClient()
    try world.join(0, uid: 7)
    try world.join(1, uid: 7)
    // The edge remembers as many consumed tickets as it holds sessions (§12.6): at one, the
    // second CONFIRM is dropped until the first ticket expires (10 s), and the device's
    // next attempt after that (its backoff's, at 15.4 s) goes through.
    #expect(world.clients[1].lastState == .connectionStateChanged(.connecting, .connecting))
    world.run(for: .seconds(20))
    #expect(world.clients[0].lastState == .connectionStateChanged(.failed, .sameUIDLogin))
    #expect(world.clients[1].lastState == .connectionStateChanged(.connected, .joinSuccess))
  }

  // MARK: - Resume and restart

  @Test func rejoin_withinForgetAfter_isResumed_andMembersSeeNoOffline() throws {
    var world = World()
    let a = world.addClient()
    let b = world.addClient()
    try world.join(a)
    try world.join(b)
    world.run(for: .seconds(2))
    world.linkUp[a] = false
    world.run(for: .seconds(8))  // A: INTERRUPTED at +4 s, rejoining; B: A interrupted
    #expect(world.clients[a].session.state == .reconnecting)
    world.linkUp[a] = true
    world.run(for: .seconds(10))
    #expect(world.clients[a].lastState == .connectionStateChanged(.connected, .rejoinSuccess))
    #expect(world.accepts(to: a).map(\.resumed) == [false, true])
    #expect(world.accepts(to: a).map(\.uid) == [1_000_000, 1_000_000])
    let seenByB = world.clients[b].notifications
    #expect(seenByB.contains(.remoteMemberInterrupted(uid: 1_000_000)))
    #expect(seenByB.contains(.remoteMemberResumed(uid: 1_000_000)))
    #expect(!seenByB.contains { if case .userOffline = $0 { true } else { false } })
  }

  @Test func aNewAddress_movesTheSession_withNoRejoin() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a)
    world.run(for: .seconds(1))
    let before = world.clients[a].stateChanges
    world.addresses[a] = World.address(99)
    world.run(for: .seconds(3))
    #expect(world.serverSent.last { $0.to == World.address(99) } != nil)
    // A sealed datagram from another address starts a path challenge there; the echo moves
    // the session (docs/PROTOCOL.md §12.11): no rejoin, no state change on the device.
    #expect(world.clients[a].stateChanges == before)
    #expect(world.server.counters.migrations == 1)
    let id = world.serverKey(world.clients[a].cookie, of: a)
    #expect(world.server.table[id]?.address == World.address(99))
    #expect(world.accepts(to: a).count == 0)  // none at the new address: no new ACCEPT
  }

  @Test func serverRestart_clientGoesKeepAliveTimeout_thenRejoinSuccess() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, uid: 9, token: world.token(uid: 9))
    world.run(for: .ms(1500))
    world.restartServer()
    world.run(for: .seconds(2))
    #expect(
      Array(world.clients[a].stateChanges.suffix(2)) == [
        .connectionStateChanged(.reconnecting, .keepAliveTimeout),
        .connectionStateChanged(.connected, .rejoinSuccess),
      ])
    #expect(world.serverSession(of: a)?.uid == 9)
    #expect(world.accepts(to: a).last?.resumed == false)
  }

  /// Version 2: a rejoin's INIT whose token no longer grants the session is refused at the
  /// INIT (REFUSE_SEALED, INVALID_TOKEN), which ends the device (DISCONNECTED) but changes
  /// nothing the edge holds (§12.6, rule 5: a refused INIT makes and ends nothing). The
  /// session is forgotten after forget-after, so the members see it DROPPED, where version
  /// 1's JOIN from the session's own address ended it at once (QUIT).
  @Test func rejoin_withATokenThatNoLongerPasses_endsTheDevice_andTheEdgeForgetsTheSession()
    throws
  {
    var world = World()
    let a = world.addClient()
    let b = world.addClient()
    try world.join(a)
    try world.join(b)
    world.run(for: .seconds(1))
    world.linkUp[a] = false
    world.run(for: .seconds(5))
    // While rejoining, A's app hands it a token for another channel.
    try world.renew(a, world.token(channel: "elsewhere"))
    world.linkUp[a] = true
    world.run(for: .seconds(5))
    #expect(world.clients[a].lastState == .connectionStateChanged(.disconnected, .invalidToken))
    #expect(world.server.counters.refusedHandshakes >= 1)
    #expect(world.server.sessionCount == 2)
    world.run(for: .seconds(30))
    #expect(world.server.sessionCount == 1)
    #expect(
      world.clients[b].notifications.contains(.userOffline(uid: 1_000_000, reason: .dropped)))
  }
}
