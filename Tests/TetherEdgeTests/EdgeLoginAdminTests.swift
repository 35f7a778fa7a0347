import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// KICK_USER, the admin command 0x02 (docs/PROTOCOL.md, "Admin: KICK_USER"): its codec, and
/// what the server does with it: KICK BANNED to the user's login session, *left* events to
/// the others, LOGIN_REFUSE 7 NOT_AUTHORIZED while a ban lasts.
struct EdgeLoginAdminTests {
  typealias Bench = LoginBench
  static let admin = PeerAddress(bytes: [0xAD])!
  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B
  static let request = AdminKickUser(
    userID: Bench.user("alice"), banSeconds: 60, unixTime: 1_700_000_000,
    nonce: 0x0102_0304_0506_0708)

  static func kickUser(
    _ user: String = "alice", ban: UInt32 = 0, at time: UInt64, nonce: UInt64 = 1,
    certificate: [UInt8] = World.certificate
  ) -> [UInt8] {
    AdminKickUser(userID: Bench.user(user), banSeconds: ban, unixTime: time, nonce: nonce)
      .sealed(appID: Fixture.appID, certificate: certificate)
  }

  /// Sends an admin datagram through the server's one entry point; returns the one-byte
  /// answer (the rest is recorded in the bench).
  static func send(_ datagram: [UInt8], in bench: inout Bench) -> [UInt8]? {
    let out = bench.server.receive(
      datagram[...], from: admin, now: bench.now, wallClock: bench.wallClock)
    for item in out where item.address != admin {
      bench.sent +=
        (try? Packet.decode(item.bytes[...])).map {
          [Bench.Sent(at: bench.now, to: item.address, cookie: $0.cookie, message: $0.message)]
        } ?? []
    }
    return out.first { $0.address == admin }?.bytes
  }

  // MARK: - Codec

  @Test func sealed_opens_toTheSameRequest_andAsAnAdminRequest() throws {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: World.certificate)
    #expect(
      try AdminKickUser.open(bytes[...], appID: Fixture.appID, certificate: World.certificate)
        == Self.request)
    #expect(
      try AdminRequest.open(bytes[...], appID: Fixture.appID, certificate: World.certificate)
        == .kickUser(Self.request))
    #expect(throws: AdminError.malformed) {
      try AdminKick.open(bytes[...], appID: Fixture.appID, certificate: World.certificate)
    }
  }

  @Test func sealed_layout_isPinned() {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: World.certificate)
    // "TA", version 1, KICK_USER, app id "app-1", user id "alice", ban, time, nonce, MAC.
    let head: [UInt8] =
      [0x54, 0x41, 0x01, 0x02, 0x05] + Array("app-1".utf8) + [0x05] + Array("alice".utf8)
    let fields: [UInt8] = [
      0x00, 0x00, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xF1, 0x00,
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ]
    #expect(Array(bytes.prefix(head.count + fields.count)) == head + fields)
    #expect(bytes.count == 58 + 5 + 5)
    #expect(AdminKick.hasMagic(bytes[...]))
  }

  @Test func open_refuses_everyChangedByte_andEveryCut() {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: World.certificate)
    for index in bytes.indices {
      var tampered = bytes
      tampered[index] ^= 0x01
      #expect(
        (try? AdminRequest.open(
          tampered[...], appID: Fixture.appID, certificate: World.certificate)) == nil,
        "byte \(index)")
    }
    for length in 0..<bytes.count {
      #expect(
        (try? AdminRequest.open(
          bytes.prefix(length), appID: Fixture.appID, certificate: World.certificate)) == nil)
    }
    #expect(
      (try? AdminRequest.open(
        (bytes + [0])[...], appID: Fixture.appID, certificate: World.certificate)) == nil)
  }

  @Test func open_aUserIDWithASpace_isMalformed() {
    var bytes = Self.request.sealed(appID: Fixture.appID, certificate: World.certificate)
    bytes[11] = 0x20  // the user id's first byte
    #expect(throws: AdminError.malformed) {
      try AdminKickUser.open(bytes[...], appID: Fixture.appID, certificate: World.certificate)
    }
  }

  // MARK: - The server

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
    guard case .loginAccept? = again.first?.message else {
      Issue.record("expected LOGIN_ACCEPT: \(again)")
      return
    }
  }

  @Test func ban_refusesTheUsersLogins_notAuthorized_untilItEnds() {
    var bench = Self.twoInRoom()
    #expect(Self.send(Self.kickUser(ban: 60, at: bench.wallClock), in: &bench) == [0])
    bench.now = .s(59)
    let refused = bench.send(Bench.login("alice"), cookie: 0xA2, from: Bench.address(0))
    #expect(refused.map(\.message) == [.loginRefuse(code: 7)])
    #expect(bench.server.tableCounts.userBans == 1)
    // Other users are not concerned.
    guard
      case .loginAccept? = bench.send(Bench.login("carol"), cookie: 0xC, from: Bench.address(3))
        .first?.message
    else {
      Issue.record("carol was refused")
      return
    }
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
    #expect(bench.server.counters.refusedLogins == 1)
  }

  @Test func kickUser_forged_stale_replayedOrForAnotherApp_isRefused_andChangesNothing() throws {
    var bench = Self.twoInRoom()
    let now = bench.wallClock
    let forged = Self.kickUser(at: now, nonce: 1, certificate: Array("guess".utf8))
    #expect(Self.send(forged, in: &bench) == [2])
    #expect(Self.send(Self.kickUser(at: now - 61, nonce: 2), in: &bench) == [2])
    let otherApp = try AppID(validating: Array("app-2".utf8))
    let foreign = AdminKickUser(
      userID: Bench.user("alice"), banSeconds: 0, unixTime: now, nonce: 3
    ).sealed(appID: otherApp, certificate: World.certificate)
    #expect(Self.send(foreign, in: &bench) == [2])
    #expect(bench.server.loginSessionCount == 2)
    #expect(bench.server.counters.adminRefused == 3)
    let good = Self.kickUser("nobody", at: now, nonce: 4)
    #expect(Self.send(good, in: &bench) == [1])
    #expect(Self.send(good, in: &bench) == [2])
    // An unknown command is malformed: no answer.
    var unknown = Self.kickUser(at: now, nonce: 5)
    unknown[3] = 3
    #expect(Self.send(unknown, in: &bench) == nil)
    #expect(bench.server.counters.malformed == 1)
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
}
