import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Login sessions under the rules of docs/PROTOCOL.md "Security": a datagram that does not
/// authenticate (a login-profile packet under a held cookie from that session's address, or
/// a LOGIN whose token passes) gets no more bytes back than it carried, and changes no
/// session; spoofed and replayed datagrams from other addresses are counted and ignored.
struct EdgeLoginSecurityTests {
  typealias Bench = LoginBench
  static let attacker = Bench.address(900)
  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B
  /// Carol's token expired: her cookie is answered with TOKEN_EXPIRED.
  static let carol: UInt64 = 0xCA201
  /// Dave logged in again elsewhere: his first cookie is answered with KICK REMOTE_LOGIN.
  static let dave: UInt64 = 0xDA7E
  static let aliceAt = Bench.address(0)

  /// Alice and Bob in "room" (Bob with an event he has not taken), and Carol's and Dave's
  /// ended cookies.
  static func bench() -> Bench {
    var bench = Bench()
    bench.logIn("bob", cookie: bob, from: Bench.address(1))
    bench.send(Bench.join("room", sequence: 1), cookie: bob, from: Bench.address(1))
    bench.logIn("alice", cookie: alice, from: aliceAt)
    bench.send(Bench.join("room", sequence: 1), cookie: alice, from: aliceAt)
    let shortToken = Bench.token("carol", expiresAt: World.wallBase + 1)
    bench.send(Bench.login("carol", token: shortToken), cookie: carol, from: Bench.address(2))
    bench.logIn("dave", cookie: dave, from: Bench.address(3))
    bench.send(Bench.login("dave"), cookie: 0xDA7E2, from: Bench.address(4))
    bench.run(for: .seconds(2))
    return bench
  }

  /// The login sessions and channel sessions as comparable values.
  static func snapshot(_ server: EdgeServer) -> [String] {
    let logins = server.table.records.values.compactMap { session in
      session.login.map {
        "\(session.cookie) \($0.userID.text) \(session.address.bytes) \(session.lastHeard.nanoseconds)"
          + " \(session.tokenExpiry) \($0.confirmed) \($0.appliedOperations)"
          + " \($0.channels.map(\.text)) \($0.events.firstSequence) \($0.events.nextSequence)"
      }
    }
    let channels = server.table.records.values.filter { $0.kind == .channel }.map {
      "\($0.cookie) \($0.address.bytes)"
    }
    let rosters = server.table.loginChannels.channels.map { "\($0.key.text): \($0.value.count)" }
    let bans = server.userBans.map { "ban \($0.key.text) \($0.value)" }
    return (logins + channels).sorted() + rosters.sorted() + bans.sorted()
  }

  /// True when `datagram` from `address` authenticates as far as login sessions go (and as
  /// EdgeSecurityTests judges the channel profile's).
  static func authenticates(
    _ datagram: [UInt8], from address: PeerAddress, server: EdgeServer, wallClock: UInt64
  ) -> Bool {
    if EdgeSecurityTests.authenticates(
      datagram, from: address, server: server, wallClock: wallClock)
    {
      return true
    }
    guard let packet = try? Packet.decode(datagram[...]) else { return false }
    if server.table[packet.cookie]?.kind == .login
      && server.table[packet.cookie]?.address == address
    {
      return true
    }
    guard case .login(let request) = packet.message, request.appID == server.config.appID
    else { return false }
    return
      (try? server.signer.verify(
        request.token.bytes, for: .user(request.userID), wallClock: wallClock)) != nil
  }

  /// For every datagram from every address that does not authenticate, run on a copy of the
  /// bench's server: bytes out ≤ bytes in, and no session changed. Returns how many.
  @discardableResult
  static func expectNoAmplification(
    _ datagrams: [[UInt8]], from addresses: [PeerAddress], bench: Bench,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> Int {
    let before = snapshot(bench.server)
    var checked = 0
    for datagram in datagrams {
      for address in addresses {
        guard
          !authenticates(datagram, from: address, server: bench.server, wallClock: bench.wallClock)
        else { continue }
        var server = bench.server
        let out = server.receive(
          datagram[...], from: address, now: bench.now, wallClock: bench.wallClock)
        let sent = out.reduce(0) { $0 + $1.bytes.count }
        #expect(
          sent <= datagram.count, "\(sent) bytes out for \(datagram.count) in: \(datagram)",
          sourceLocation: sourceLocation)
        #expect(
          snapshot(server) == before, "a session changed: \(datagram)",
          sourceLocation: sourceLocation)
        checked += 1
      }
    }
    return checked
  }

  /// Every login-profile message under every kind of cookie, with good and bad tokens.
  static func structuredDatagrams(_ bench: Bench) throws -> [[UInt8]] {
    let otherApp = try AppID(validating: Array("app-2".utf8))
    let tokens: [Token] = [
      .empty, Fixture.token, Bench.token("alice"), Bench.token("bob"), Bench.token("carol"),
      Bench.token("alice", expiresAt: bench.wallClock - 1),
      Bench.token("alice", appID: otherApp), World.token(uid: 0, expiresAt: 0),
      try Token(validating: [UInt8](repeating: 0x41, count: Token.maximumLength)),
    ]
    var messages: [Message] = [
      .loginHeartbeat(sequence: 1, eventsReceived: 0),
      .loginHeartbeat(sequence: .max, eventsReceived: .max), .logout,
      Bench.join("room", sequence: 2), Bench.join("other", sequence: 2),
      Bench.leave("room", sequence: 2), Bench.join("room", sequence: 1),
      .heartbeat(sequence: 1), .leave,
    ]
    for token in tokens {
      messages.append(.renewToken(token))
      for user in ["alice", "bob", "carol", "dave", "eve"] {
        for app in [Fixture.appID, otherApp] {
          for relogin in [false, true] {
            messages.append(
              .login(
                LoginRequest(appID: app, userID: Bench.user(user), token: token, isRelogin: relogin)
              ))
          }
        }
      }
    }
    var datagrams: [[UInt8]] = []
    for cookie in [alice, bob, carol, dave, alice ^ 1, 0, .max] {
      datagrams += messages.map { Packet(cookie: cookie, message: $0).encoded }
    }
    // Server → client login types, which the server must not answer at all.
    datagrams.append(Packet(cookie: alice, message: .loginRefuse(code: 7)).encoded)
    datagrams.append(Packet(cookie: alice, message: .channelAck(sequence: 1)).encoded)
    datagrams.append(
      Packet(
        cookie: alice,
        message: .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: true))
      ).encoded)
    // Admin KICK_USER: forged, another certificate, cut short.
    let kick = AdminKickUser(
      userID: Bench.user("alice"), banSeconds: 60, unixTime: bench.wallClock, nonce: 9)
    var forged = kick.sealed(appID: Fixture.appID, certificate: World.certificate)
    forged[forged.count - 1] ^= 1
    datagrams.append(forged)
    datagrams.append(kick.sealed(appID: Fixture.appID, certificate: Array("cert-2".utf8)))
    datagrams.append(Array(forged.prefix(20)))
    return datagrams
  }

  // MARK: - No amplification, no change

  @Test func noLoginDatagramThatDoesNotAuthenticate_getsMoreBytesBack_orChangesASession() throws {
    let bench = Self.bench()
    #expect(bench.server.loginSessionCount == 3)
    #expect(bench.messages(to: Self.carol).last == .tokenExpired)
    #expect(bench.messages(to: Self.dave).last == .kick(.remoteLogin))
    let datagrams = try Self.structuredDatagrams(bench)
    // From an address nobody uses, and from Bob's (a session under Alice's cookie must not
    // answer at Bob's address).
    let checked = Self.expectNoAmplification(
      datagrams, from: [Self.attacker, Bench.address(1)], bench: bench)
    #expect(checked > 1500)
  }

  @Test func randomAndMutatedLoginDatagrams_neverGetMoreBytesBack() throws {
    let bench = Self.bench()
    var random = SeededRandom(seed: 42)
    let valid = try Self.structuredDatagrams(bench)
    var datagrams: [[UInt8]] = []
    for _ in 0..<3000 {
      var bytes = valid[Int(random.next() % UInt64(valid.count))]
      for _ in 0..<(1 + random.next() % 4) {
        bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
      }
      datagrams.append(bytes)
      let length = Int(random.next() % 100)
      var noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if length >= 4 { noise[0...3] = [0x54, 0x48, 0x01, UInt8(5 + random.next() % 4)] }
      datagrams.append(noise)
    }
    let checked = Self.expectNoAmplification(
      datagrams, from: [Self.attacker, Bench.address(1)], bench: bench)
    #expect(checked > 10_000)
  }

  // MARK: - Spoofed and replayed datagrams

  @Test func heartbeat_fromAnotherAddress_getsSessionUnknown_noEvents_andMovesNothing() {
    var bench = Self.bench()
    let lastHeard = bench.server.table[Self.bob]?.lastHeard
    let out = bench.send(
      .loginHeartbeat(sequence: 3, eventsReceived: 0), cookie: Self.bob, from: Self.attacker)
    #expect(out.map(\.message) == [.sessionUnknown])
    #expect(out.first?.to == Self.attacker)
    #expect(bench.server.table[Self.bob]?.lastHeard == lastHeard)
    #expect(bench.server.table[Self.bob]?.address == Bench.address(1))
    #expect(bench.server.counters.wrongAddress == 1)
    // Nor can it acknowledge Bob's events for him.
    bench.send(
      .loginHeartbeat(sequence: 4, eventsReceived: 1), cookie: Self.bob, from: Self.attacker)
    #expect(bench.server.table[Self.bob]?.login?.events.pending.count == 1)
  }

  @Test func operation_logout_andRenew_fromAnotherAddress_changeNothing() {
    var bench = Self.bench()
    let before = Self.snapshot(bench.server)
    let op = bench.send(Bench.leave("room", sequence: 2), cookie: Self.alice, from: Self.attacker)
    #expect(op.map(\.message) == [.sessionUnknown])
    #expect(bench.send(.logout, cookie: Self.alice, from: Self.attacker).isEmpty)
    let renew = bench.send(
      .renewToken(Bench.token("alice", expiresAt: World.wallBase + 5)), cookie: Self.alice,
      from: Self.attacker)
    #expect(renew.map(\.message) == [.sessionUnknown])
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.wrongAddress == 3)
    #expect(bench.server.counters.unknownSession == 3)
  }

  @Test func login_withABadToken_underAHeldCookie_fromAnotherAddress_isRefused_andMovesNothing() {
    var bench = Self.bench()
    let before = Self.snapshot(bench.server)
    let out = bench.send(
      Bench.login("alice", token: Bench.token("mallory"), relogin: true), cookie: Self.alice,
      from: Self.attacker)
    #expect(out.map(\.message) == [.loginRefuse(code: 5)])
    #expect(Self.snapshot(bench.server) == before)
    // Nor from Alice's own address: a LOGIN whose token fails changes nothing.
    bench.send(
      Bench.login("alice", token: Bench.token("alice", expiresAt: 1), relogin: true),
      cookie: Self.alice, from: Self.aliceAt)
    #expect(Self.snapshot(bench.server) == before)
  }

  /// The limit of version 1, as for JOIN: a sender that holds a valid LOGIN (it saw one on
  /// the path) can move the session by replaying it. The session's own client moves it back
  /// with its next LOGIN, and nobody else notices.
  @Test func aReplayedValidLogin_movesTheSession_asAJoinWould() {
    var bench = Self.bench()
    let login = Bench.datagram(Bench.login("alice", relogin: true), cookie: Self.alice)
    bench.sendRaw(login, from: Self.attacker)
    #expect(bench.server.table[Self.alice]?.address == Self.attacker)
    let bobEvents = bench.events(to: Self.bob)
    bench.sendRaw(login, from: Self.aliceAt)
    #expect(bench.server.table[Self.alice]?.address == Self.aliceAt)
    #expect(bench.events(to: Self.bob) == bobEvents)
  }

  @Test func aLoginFlood_fromOneSource_isLimited_withoutATokenCheck() {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: 4, refill: .seconds(100))
    var bench = Bench(config: config)
    var answers: [Message] = []
    for n in 0..<50 {
      let login = Bench.login("alice", token: Bench.token("nobody"))
      answers += bench.send(login, cookie: UInt64(1000 + n), from: Self.attacker).map(\.message)
    }
    #expect(answers.count == 50)
    #expect(answers.filter { $0 == .loginRefuse(code: 5) }.count == 4)
    #expect(answers.filter { $0 == .loginRefuse(code: 2) }.count == 46)
    #expect(bench.server.counters.joinsLimited == 46)
  }
}
