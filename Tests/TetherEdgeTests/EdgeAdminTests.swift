// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Kick and ban through the admin entry point (docs/PROTOCOL.md "Admin: KICK" and "Admin:
/// KICK_USER"): a channel member, a login user, and the requests refused.
struct EdgeAdminTests {
  typealias Bench = LoginBench
  static let admin = PeerAddress(bytes: [0xAD])!
  static let member: UInt32 = 1_000_000
  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B

  static func kickUser(
    _ user: String = "alice", ban: UInt32 = 0, at time: UInt64, nonce: UInt64 = 1,
    certificate: [UInt8] = World.certificate
  ) -> [UInt8] {
    AdminKickUser(userID: Bench.user(user), banSeconds: ban, unixTime: time, nonce: nonce)
      .sealed(appID: Fixture.appID, certificate: certificate)
  }

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

  /// Sends `datagram` to the admin entry point and delivers the rest (sealed, through the
  /// world's network); returns the answer.
  static func send(_ datagram: [UInt8], in world: inout World) -> [UInt8]? {
    world.admin(datagram)
  }

  /// Sends an admin datagram through the server's one entry point; returns the one-byte
  /// answer (the rest is recorded in the bench, read as its devices read it).
  static func send(_ datagram: [UInt8], in bench: inout Bench) -> [UInt8]? {
    let out = bench.server.receive(
      datagram[...], from: admin, now: bench.now, wallClock: bench.wallClock)
    bench.record(out.filter { $0.address != admin })
    return out.first { $0.address == admin }?.bytes
  }

  // MARK: - KICK: a channel member

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
    // Refused at the INIT (REFUSE_SEALED BANNED), which the layer hands the session as the
    // KICK BANNED it stands for.
    #expect(world.clients[0].lastHanded?.message == .kick(.banned))
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

  // MARK: - KICK_USER: a login user

  static func twoInRoom() -> Bench {
    var bench = Bench()
    bench.logIn("bob", cookie: bob, from: Bench.address(1))
    bench.send(Bench.join("room", sequence: 1), cookie: bob, from: Bench.address(1))
    bench.logIn("alice", cookie: alice, from: Bench.address(0))
    bench.send(Bench.join("room", sequence: 1), cookie: alice, from: Bench.address(0))
    return bench
  }

  @Test func kickUser_endsTheLoginSessionBanned_othersGetLeft_andTheKickIsRepeated() {
    var bench = Self.twoInRoom()
    #expect(Self.send(Self.kickUser(at: bench.wallClock), in: &bench) == [0])
    #expect(
      bench.sent.contains(
        Bench.Sent(at: .zero, to: Bench.address(0), cookie: Self.alice, message: .kick(.banned))))
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
    #expect(bench.server.loginSessionCount == 1)
    let heartbeat = bench.send(
      .loginHeartbeat(sequence: 2, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    #expect(heartbeat.map(\.message) == [.kick(.banned)])
    // Without a ban, a new LOGIN is taken.
    let again = bench.send(Bench.login("alice"), cookie: 0xA2, from: Bench.address(0))
    #expect(Bench.isAccepted(again), "expected LOGIN_ACCEPT: \(again)")
  }

  @Test func ban_refusesTheUsersLogins_notAuthorized_untilItEnds() throws {
    var bench = Self.twoInRoom()
    #expect(Self.send(Self.kickUser(ban: 60, at: bench.wallClock), in: &bench) == [0])
    bench.now = .s(59)
    let refused = bench.send(Bench.login("alice"), cookie: 0xA2, from: Bench.address(0))
    #expect(refused.map(\.message) == [.loginRefuse(code: 7)])
    #expect(bench.server.tableCounts.userBans == 1)
    // Other users are not concerned.
    let carol = bench.send(Bench.login("carol"), cookie: 0xC, from: Bench.address(3))
    try #require(Bench.isAccepted(carol), "carol was refused")
    bench.now = .s(60)
    let accepted = bench.send(Bench.login("alice"), cookie: 0xA3, from: Bench.address(0))
    #expect(
      accepted.map(\.message) == [
        .loginAccept(
          LoginAccept(serverTimeMs: 60_000, tokenTimeLeftMs: 0, resumed: false, session: 3))
      ])
    bench.run(for: .seconds(2))
    #expect(bench.server.tableCounts.userBans == 0)
  }

  @Test func ban_ofAUserNotLoggedIn_answersNoSuchMember_andStillBans() {
    var bench = Bench()
    #expect(Self.send(Self.kickUser("dave", ban: 30, at: bench.wallClock), in: &bench) == [1])
    let refused = bench.send(Bench.login("dave"), cookie: 0xD, from: Bench.address(4))
    #expect(refused.map(\.message) == [.loginRefuse(code: 7)])
    #expect(bench.server.counters.refusedHandshakes == 1)  // refused at the INIT
  }

  @Test func kickUser_isLogged() {
    var config = World.config()
    config.recordsEvents = true
    var bench = Bench(config: config)
    bench.logIn("alice", cookie: Self.alice, from: Bench.address(0))
    _ = Self.send(Self.kickUser(ban: 5, at: bench.wallClock), in: &bench)
    #expect(
      bench.server.takeEvents().map(\.description) == ["login alice", "kick user alice ban 5 s"])
  }

  // MARK: - Refused, either command

  enum Command: CaseIterable { case kick, kickUser }

  /// A request of `command` for the first channel member or for Alice (for nobody with
  /// `present` false).
  static func request(
    _ command: Command, present: Bool = true, at time: UInt64, nonce: UInt64 = 1,
    appID: AppID = Fixture.appID, certificate: [UInt8] = World.certificate
  ) -> [UInt8] {
    switch command {
    case .kick:
      AdminKick(
        channel: Fixture.channel, uid: present ? member : 5, banSeconds: 0, unixTime: time,
        nonce: nonce
      ).sealed(appID: appID, certificate: certificate)
    case .kickUser:
      AdminKickUser(
        userID: Bench.user(present ? "alice" : "nobody"), banSeconds: 0, unixTime: time,
        nonce: nonce
      ).sealed(appID: appID, certificate: certificate)
    }
  }

  /// Two channel members and Alice and Bob logged in, on one server.
  static func bothProfiles() throws -> Bench {
    let world = try twoMembers()
    var bench = Bench(server: world.server, now: world.now)
    bench.logIn("bob", cookie: bob, from: World.address(101))
    bench.logIn("alice", cookie: alice, from: World.address(100))
    return bench
  }

  static func sessions(_ bench: Bench) -> [Int] {
    [bench.server.sessionCount, bench.server.loginSessionCount]
  }

  @Test(arguments: Command.allCases)
  func request_withABadMAC_isRefused(_ command: Command) throws {
    var bench = try Self.bothProfiles()
    let forged = Self.request(command, at: bench.wallClock, certificate: Array("guess".utf8))
    #expect(Self.send(forged, in: &bench) == [AdminStatus.refused.rawValue])
    #expect(Self.sessions(bench) == [2, 2])
    #expect(bench.server.counters.adminRefused == 1)
  }

  @Test(arguments: Command.allCases)
  func request_outsideSixtySeconds_isRefused_andWithinIsTaken(_ command: Command) throws {
    var bench = try Self.bothProfiles()
    let now = bench.wallClock
    #expect(Self.send(Self.request(command, at: now - 61, nonce: 1), in: &bench) == [2])
    #expect(Self.send(Self.request(command, at: now + 61, nonce: 2), in: &bench) == [2])
    #expect(Self.sessions(bench) == [2, 2])
    #expect(bench.server.counters.adminRefused == 2)
    #expect(Self.send(Self.request(command, at: now - 60, nonce: 3), in: &bench) == [0])
    #expect(Self.sessions(bench) == (command == .kick ? [1, 2] : [2, 1]))
  }

  @Test(arguments: Command.allCases)
  func request_replayed_isRefused(_ command: Command) throws {
    var bench = try Self.bothProfiles()
    let bytes = Self.request(command, present: false, at: bench.wallClock)
    #expect(Self.send(bytes, in: &bench) == [1])
    #expect(Self.send(bytes, in: &bench) == [2])
  }

  @Test(arguments: Command.allCases)
  func request_forAnotherApp_isRefused(_ command: Command) throws {
    var bench = try Self.bothProfiles()
    let other = try AppID(validating: Array("app-2".utf8))
    #expect(
      Self.send(Self.request(command, at: bench.wallClock, appID: other), in: &bench) == [2])
    #expect(Self.sessions(bench) == [2, 2])
    #expect(bench.server.counters.adminRefused == 1)
  }

  /// Cut short, the magic alone, an unknown command: no answer, counted as malformed.
  @Test(arguments: Command.allCases)
  func request_malformed_getsNoAnswer_andIsCounted(_ command: Command) throws {
    var bench = try Self.bothProfiles()
    let bytes = Self.request(command, at: bench.wallClock)
    var unknown = bytes
    unknown[3] = 3
    for malformed in [Array(bytes.dropLast()), [0x54, 0x41], unknown] {
      #expect(Self.send(malformed, in: &bench) == nil)
    }
    #expect(bench.server.counters.malformed == 3)
    #expect(Self.sessions(bench) == [2, 2])
  }
}
