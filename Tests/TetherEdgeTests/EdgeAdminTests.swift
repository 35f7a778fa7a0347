import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Kick and ban through the admin entry point, with signed, forged and stale requests.
struct EdgeAdminTests {
  static let admin = PeerAddress(bytes: [0xAD])!
  static let member: UInt32 = 1_000_000

  static func kick(
    uid: UInt32 = member, ban: UInt32 = 0, at time: UInt64, nonce: UInt64 = 1,
    certificate: [UInt8] = World.certificate
  ) -> [UInt8] {
    AdminKick(channel: Fixture.channel, uid: uid, banSeconds: ban, unixTime: time, nonce: nonce)
      .sealed(appID: Fixture.appID, certificate: certificate)
  }

  static func twoMembers() throws -> World {
    var world = World()
    world.addClient()
    world.addClient()
    try world.join(0)
    try world.join(1)
    world.run(for: .seconds(2))
    return world
  }

  /// Sends `datagram` to the admin entry point and delivers the rest; returns the answer.
  static func send(_ datagram: [UInt8], in world: inout World) -> [UInt8]? {
    let out = world.server.admin(
      datagram[...], from: admin, now: world.now, wallClock: world.wallClock)
    let answer = out.first { $0.address == admin }?.bytes
    for datagram in out where datagram.address != admin {
      if let i = world.addresses.firstIndex(of: datagram.address) {
        world.clients[i].step { s, now, o in
          _ = s.receive(datagram: datagram.bytes[...], now: now, into: &o)
        }
      }
    }
    return answer
  }

  // MARK: - Kick

  @Test func kick_signed_removesTheMember_bannedByServer_andOthersSeeQuit() throws {
    var world = try Self.twoMembers()
    let answer = Self.send(Self.kick(at: world.wallClock), in: &world)
    #expect(answer == [AdminStatus.kicked.rawValue])
    #expect(world.clients[0].lastState == .connectionStateChanged(.failed, .bannedByServer))
    #expect(world.clients[1].notifications.last == .userOffline(uid: Self.member, reason: .quit))
    #expect(world.server.sessionCount == 1)
  }

  @Test func kick_throughReceive_isTheSameEntryPoint() throws {
    var world = try Self.twoMembers()
    let bytes = Self.kick(at: world.wallClock)
    let out = world.server.receive(
      bytes[...], from: Self.admin, now: world.now, wallClock: world.wallClock)
    #expect(out.first { $0.address == Self.admin }?.bytes == [AdminStatus.kicked.rawValue])
    #expect(world.server.sessionCount == 1)
  }

  @Test func kick_withoutBan_letsTheUidJoinAgain() throws {
    var world = try Self.twoMembers()
    _ = Self.send(Self.kick(at: world.wallClock), in: &world)
    world.leave(0)
    try world.join(0, uid: Self.member, token: world.token(uid: Self.member))
    #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .joinSuccess))
  }

  @Test func ban_refusesTheUid_bannedByServer_untilItEnds() throws {
    var world = try Self.twoMembers()
    #expect(Self.send(Self.kick(ban: 60, at: world.wallClock), in: &world) == [0])
    world.leave(0)
    world.run(for: .seconds(30))
    try world.join(0, uid: Self.member, token: world.token(uid: Self.member))
    #expect(world.clients[0].lastState == .connectionStateChanged(.failed, .bannedByServer))
    #expect(world.messages(to: 0).last == .kick(.banned))
    world.leave(0)
    world.run(for: .seconds(31))
    try world.join(0, uid: Self.member, token: world.token(uid: Self.member))
    #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .joinSuccess))
  }

  @Test func ban_ofAnAbsentMember_answersNoSuchMember_andStillBans() throws {
    var world = try Self.twoMembers()
    #expect(Self.send(Self.kick(uid: 5, ban: 60, at: world.wallClock), in: &world) == [1])
    world.addClient()
    try world.join(2, uid: 5, token: world.token(uid: 5))
    #expect(world.clients[2].lastState == .connectionStateChanged(.failed, .bannedByServer))
  }

  /// A JOIN with uid 0 is never banned: it gets a fresh uid (PROTOCOL.md, "Admin: KICK").
  /// Not a banned one: the device would ask for that uid on every rejoin, and the first
  /// one that finds no session (after an outage past forget-after) would be kicked BANNED.
  @Test func aUidZeroJoin_isNotGivenABannedUid_soItsRejoinsAreNotBanned() throws {
    var world = try Self.twoMembers()
    #expect(Self.send(Self.kick(ban: 600, at: world.wallClock), in: &world) == [0])
    world.addClient()
    try world.join(2)
    let uid = try #require(world.accepts(to: 2).last?.uid)
    #expect(uid != Self.member)
    world.linkUp[2] = false
    world.run(for: .seconds(40))
    #expect(world.server.sessionCount == 1)
    world.linkUp[2] = true
    world.run(for: .seconds(10))
    #expect(world.clients[2].lastState == .connectionStateChanged(.connected, .rejoinSuccess))
    #expect(world.server.members(of: Fixture.channel).contains(uid))
  }

  @Test func kick_ofNobody_answersNoSuchMember() throws {
    var world = try Self.twoMembers()
    #expect(
      Self.send(Self.kick(uid: 5, at: world.wallClock), in: &world) == [
        AdminStatus.noSuchMember.rawValue
      ])
    #expect(world.server.sessionCount == 2)
  }

  // MARK: - Refused

  @Test func kick_withABadMAC_isRefused() throws {
    var world = try Self.twoMembers()
    let forged = Self.kick(at: world.wallClock, certificate: Array("guess".utf8))
    #expect(Self.send(forged, in: &world) == [AdminStatus.refused.rawValue])
    #expect(world.server.sessionCount == 2)
    #expect(world.server.counters.adminRefused == 1)
  }

  @Test func kick_outsideSixtySeconds_isRefused_andWithinIsTaken() throws {
    var world = try Self.twoMembers()
    let now = world.wallClock
    #expect(Self.send(Self.kick(at: now - 61, nonce: 1), in: &world) == [2])
    #expect(Self.send(Self.kick(at: now + 61, nonce: 2), in: &world) == [2])
    #expect(world.server.sessionCount == 2)
    #expect(Self.send(Self.kick(at: now - 60, nonce: 3), in: &world) == [0])
  }

  @Test func kick_replayed_isRefused() throws {
    var world = try Self.twoMembers()
    let bytes = Self.kick(uid: 5, at: world.wallClock)
    #expect(Self.send(bytes, in: &world) == [1])
    #expect(Self.send(bytes, in: &world) == [2])
  }

  @Test func kick_forAnotherApp_isRefused() throws {
    var world = try Self.twoMembers()
    let other = try AppID(validating: Array("app-2".utf8))
    let bytes = AdminKick(
      channel: Fixture.channel, uid: Self.member, banSeconds: 0, unixTime: world.wallClock, nonce: 9
    )
    .sealed(appID: other, certificate: World.certificate)
    #expect(Self.send(bytes, in: &world) == [2])
  }

  @Test func kick_malformed_getsNoAnswer_andIsCounted() throws {
    var world = try Self.twoMembers()
    let bytes = Self.kick(at: world.wallClock)
    #expect(Self.send(Array(bytes.dropLast()), in: &world) == nil)
    #expect(Self.send([0x54, 0x41], in: &world) == nil)
    #expect(world.server.counters.malformed == 2)
    #expect(world.server.sessionCount == 2)
  }
}
