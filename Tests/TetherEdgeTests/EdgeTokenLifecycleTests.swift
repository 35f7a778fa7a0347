// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Tokens while joined: expiry, renewal accepted and refused.
struct EdgeTokenLifecycleTests {
  /// Two members; the first one's token expires 10 s after it joined, 2 s ago.
  static func expiredWhileJoined() throws -> World {
    var world = World()
    world.addClient()
    world.addClient()
    try world.join(0, token: world.token(expiresIn: 10))
    try world.join(1)
    world.run(for: .seconds(12))
    return world
  }

  @Test func tokenExpiry_whileJoined_clientFailsTokenExpired_andMembersSeeQuit() throws {
    let world = try Self.expiredWhileJoined()
    #expect(world.clients[0].lastState == .connectionStateChanged(.failed, .tokenExpired))
    #expect(world.clients[1].notifications.contains(.userOffline(uid: 1_000_000, reason: .quit)))
    #expect(world.server.sessionCount == 1)
    #expect(world.messages(to: 0).contains(.tokenExpired))
  }

  @Test func tokenCheck_sendsTokenExpired_atTheFirstCheckAfterExpiry() throws {
    var bench = SecureBench()
    let start = bench.now
    var device = bench.device(
      .channel(Fixture.channel, uid: 3), expiresAt: bench.wallClock + 5)
    bench.connect(&device, SecureBench.channelRequest(uid: 3))
    for second: UInt64 in 1...4 {
      #expect(bench.advance(by: .seconds(1)).isEmpty)
      #expect(bench.server.nextDeadline == start + .seconds(second + 1))
    }
    let out = bench.advance(by: .seconds(1))
    #expect(out.map(\.address) == [device.address])
    #expect(
      out.compactMap { device.open($0.bytes) }.map { EdgePayloadView(bytes: $0).message } == [
        .tokenExpired
      ])
    #expect(bench.server.sessionCount == 0)
  }

  /// docs/BEHAVIOUR.md: `tether_renew_token` after FAILED/TOKEN_EXPIRED rejoins with the new
  /// token. The server ended the session with TOKEN_EXPIRED a moment before; the new
  /// handshake is judged by its own token (as a LOGIN is), not answered TOKEN_EXPIRED again
  /// for forget-after.
  @Test func renew_afterTokenExpired_rejoinsUnderTheEndedCookie() throws {
    var world = try Self.expiredWhileJoined()
    #expect(world.clients[0].lastState == .connectionStateChanged(.failed, .tokenExpired))
    #expect(world.messages(to: 0).last == .tokenExpired)
    #expect(world.server.sessionCount == 1)
    let cookie = world.clients[0].cookie
    try world.renew(0, world.token(expiresIn: 3600))
    world.run(for: .seconds(2))
    #expect(
      world.clients[0].stateChanges.suffix(2) == [
        .connectionStateChanged(.reconnecting, .renewToken),
        .connectionStateChanged(.connected, .rejoinSuccess),
      ])
    #expect(world.serverSession(of: 0)?.uid == 1_000_000)
    // Once its new session has left, its id is unknown (a RESET, once the id is older than
    // a ticket lifetime: §12.9), not expired.
    let id = world.serverKey(cookie, of: 0)
    world.leave(0)
    world.run(for: .seconds(11))
    world.sendRaw(
      [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 40, 8)
        + DevicePayloads.heartbeat(9) + [UInt8](repeating: 0, count: 16), from: 0)
    #expect(world.messages(to: 0).last == .sessionUnknown)
  }

  @Test func renew_accepted_movesTheClientsTokenClock() throws {
    var world = World()
    world.addClient()
    try world.join(0, token: world.token(expiresIn: 60))
    world.run(for: .seconds(20))
    try world.renew(0, world.token(expiresIn: 3600))
    #expect(
      world.messages(to: 0).last
        == .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000)))
    #expect(world.clients[0].session.tokenExpiresAt == .s(20 + 3600))
    world.run(for: .seconds(60))
    #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .joinSuccess))
    #expect(world.server.sessionCount == 1)
  }

  @Test func renew_withABadToken_isRefusedInvalidToken_andTheClientAsksForAnother() throws {
    var world = World()
    world.addClient()
    try world.join(0, token: world.token(expiresIn: 60))
    world.run(for: .seconds(5))
    try world.renew(0, world.token(channel: "elsewhere"))
    #expect(
      world.messages(to: 0).last
        == .tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0)))
    #expect(world.clients[0].notifications.last == .requestToken)
    #expect(world.clients[0].session.tokenExpiresAt == .s(60))
  }

  @Test func renew_withAnExpiredToken_isRefusedTokenExpired() throws {
    var world = World()
    world.addClient()
    try world.join(0, token: world.token(expiresIn: 60))
    world.run(for: .seconds(5))
    try world.renew(0, World.token(expiresAt: World.wallBase + 1))
    #expect(
      world.messages(to: 0).last
        == .tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0)))
    #expect(world.server.sessionCount == 1)
  }

  @Test func renew_withAUidZeroToken_isAcceptedForAnAssignedUid() throws {
    var world = World()
    world.addClient()
    try world.join(0, uid: 42, token: world.token(uid: 42, expiresIn: 60))
    try world.renew(0, world.token(uid: 0, expiresIn: 120))
    #expect(
      world.messages(to: 0).last
        == .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 120_000)))
  }
}
