// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// What a datagram that proves nothing can make the server do, whatever the profile of the
/// sessions it names: answer with no more bytes than it carried (no amplification), and
/// change no session. docs/PROTOCOL.md, "Security" (the join limit: EdgeJoinLimitTests).
struct EdgeSecurityTests {
  typealias Bench = LoginBench
  static let attacker = World.address(900)

  // MARK: - The sessions under attack

  /// Three members of "lobby" (client 0 joined as uid 7), and client 3 whose token expired:
  /// its cookie is an ended session the server answers with TOKEN_EXPIRED.
  static func channelWithMembers() throws -> World {
    var world = World()
    for _ in 0..<4 { world.addClient() }
    try world.join(0, uid: 7, token: world.token(uid: 7))
    try world.join(1)
    try world.join(2)
    try world.join(3, token: world.token(expiresIn: 2))
    world.run(for: .seconds(3))
    return world
  }

  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B
  /// Carol's token expired: her cookie is answered with TOKEN_EXPIRED.
  static let carol: UInt64 = 0xCA201
  /// Dave logged in again elsewhere: his first cookie is answered with KICK REMOTE_LOGIN.
  static let dave: UInt64 = 0xDA7E
  /// The login users' addresses, apart from the channel clients'.
  static let aliceAt = World.address(100)
  static let bobAt = World.address(101)

  /// Alice and Bob in the login channel "room" (Bob with an event he has not taken), and
  /// Carol's and Dave's ended cookies, added to `server` at `now`.
  static func logins(
    on server: SodiumEdgeServer = EdgeServer(config: World.config()),
    at now: Instant = .zero
  )
    -> Bench
  {
    var bench = Bench(server: server, now: now)
    bench.logIn("bob", cookie: bob, from: bobAt)
    bench.send(Bench.join("room", sequence: 1), cookie: bob, from: bobAt)
    bench.logIn("alice", cookie: alice, from: aliceAt)
    bench.send(Bench.join("room", sequence: 1), cookie: alice, from: aliceAt)
    let shortToken = Bench.token("carol", expiresAt: bench.wallClock + 1)
    bench.send(Bench.login("carol", token: shortToken), cookie: carol, from: World.address(102))
    bench.logIn("dave", cookie: dave, from: World.address(103))
    bench.send(Bench.login("dave"), cookie: 0xDA7E2, from: World.address(104))
    bench.run(for: .seconds(2))
    return bench
  }

  /// Every session of both profiles, the rosters and the bans, as comparable values.
  static func snapshot(_ server: SodiumEdgeServer) -> [String] {
    let sessions = server.table.records.values.map { session in
      var line =
        "\(session.cookie) \(session.address.bytes) \(session.lastHeard.nanoseconds)"
        + " \(session.tokenExpiry)"
      switch session.profile {
      case .channel(let member):
        line += " \(member.channel.text) \(member.uid) \(member.joinedAt.nanoseconds)"
      case .login(let login):
        line +=
          " \(login.userID.text) \(login.confirmed) \(login.appliedOperations)"
          + " \(login.channels.map(\.text)) \(login.events.firstSequence)"
          + " \(login.events.nextSequence)"
      }
      return line
    }
    let channels = server.table.channels.channels.map { "\($0.key.text): \(members($0.value))" }
    let rosters = server.table.loginChannels.channels.map {
      "\($0.key.text): \(members($0.value))"
    }
    let bans =
      server.bans.map { "ban \($0.key.channel.text) \($0.key.uid) \($0.value)" }
      + server.userBans.map { "ban \($0.key.text) \($0.value)" }
    return sessions.sorted() + channels.sorted() + rosters.sorted() + bans.sorted()
  }

  /// A roster's members and their cookies, in an order that does not depend on the
  /// dictionary's.
  static func members<Member>(_ roster: [Member: UInt64]) -> [String] {
    roster.map { "\($0.key)=\($0.value)" }.sorted()
  }

  /// True when `datagram` from `address` authenticates: a client packet under a cookie the
  /// server holds, from the address it holds that session at; a JOIN or LOGIN whose token
  /// passes for its app and grant (for a JOIN that rejoins a held session, uid 0 or its uid:
  /// the session's); an admin request whose MAC verifies.
  static func authenticates(
    _ datagram: [UInt8], from address: PeerAddress, server: SodiumEdgeServer,
    wallClock: UInt64
  ) -> Bool {
    if AdminKick.hasMagic(datagram[...]) {
      return
        (try? AdminRequest.open(
          datagram[...], appID: server.config.appID, certificate: server.config.appCertificate))
        != nil
    }
    guard let packet = try? Packet.decode(datagram[...]) else { return false }
    if server.table[packet.cookie]?.address == address { return true }
    let token: Token
    var grant: TokenGrant
    switch packet.message {
    case .join(let request):
      guard request.appID == server.config.appID,
        !SodiumEdgeServer.isReserved(request.channel)
      else {
        return false
      }
      token = request.token
      grant = .channel(request.channel, uid: request.uid)
      if let held = server.table[packet.cookie]?.member, held.channel == request.channel,
        request.uid == 0 || request.uid == held.uid
      {
        grant = .channel(held.channel, uid: held.uid)
      }
    case .login(let request):
      guard request.appID == server.config.appID else { return false }
      token = request.token
      grant = .user(request.userID)
    default: return false
    }
    return (try? server.signer.verify(token.bytes, for: grant, wallClock: wallClock)) != nil
  }

  /// Feeds each datagram, from each address, to a copy of `server`; for every one that does
  /// not authenticate, the bytes sent (to any address) must not exceed the bytes received,
  /// and no session may change. Returns how many were checked.
  @discardableResult
  static func expectNoAmplification(
    _ datagrams: [[UInt8]], from addresses: [PeerAddress], server: SodiumEdgeServer,
    now: Instant,
    wallClock: UInt64, sourceLocation: SourceLocation = #_sourceLocation
  ) -> Int {
    let before = snapshot(server)
    var checked = 0
    for datagram in datagrams {
      for address in addresses {
        guard !authenticates(datagram, from: address, server: server, wallClock: wallClock)
        else { continue }
        var copy = server
        let out = copy.receive(datagram[...], from: address, now: now, wallClock: wallClock)
        let sent = out.reduce(0) { $0 + $1.bytes.count }
        #expect(
          sent <= datagram.count, "\(sent) bytes out for \(datagram.count) in: \(datagram)",
          sourceLocation: sourceLocation)
        #expect(
          snapshot(copy) == before, "a session changed: \(datagram)",
          sourceLocation: sourceLocation)
        checked += 1
      }
    }
    return checked
  }

  /// Every client message of both profiles, with good and bad tokens, under `cookies`;
  /// server → client types; forged, foreign and cut admin requests.
  static func structuredDatagrams(cookies: [UInt64], wallClock: UInt64) throws -> [[UInt8]] {
    let lobby = Fixture.channel
    let other = try ChannelName(validating: Array("other".utf8))
    let otherApp = try AppID(validating: Array("app-2".utf8))
    let otherAppSigner = TokenSigner(appID: otherApp, certificate: World.certificate)
    let later = wallClock + 3600
    let anyToken: [Token] = [
      .empty, Fixture.token,
      try Token(validating: [UInt8](repeating: 0x41, count: Token.maximumLength)),
    ]
    let joinTokens: [Token] =
      anyToken + [
        World.token(uid: 7, expiresAt: later), World.token(uid: 0, expiresAt: later),
        World.token(uid: 8, expiresAt: later),
        World.token(channel: "other", uid: 7, expiresAt: later),
        World.token(uid: 7, expiresAt: wallClock - 1),
        try Token(validating: otherAppSigner.sign(.channel(lobby, uid: 7), expiresAt: 0)),
      ]
    let loginTokens: [Token] =
      anyToken + [
        Bench.token("alice"), Bench.token("bob"), Bench.token("carol"),
        Bench.token("alice", expiresAt: wallClock - 1), Bench.token("alice", appID: otherApp),
        World.token(uid: 0, expiresAt: 0),
      ]
    let reserved = try ChannelName(validating: Array("$sys".utf8))
    var messages: [Message] = [
      .heartbeat(sequence: 1), .heartbeat(sequence: .max), .leave,
      .loginHeartbeat(sequence: 1, eventsReceived: 0),
      .loginHeartbeat(sequence: .max, eventsReceived: .max), .logout,
      Bench.join("room", sequence: 2), Bench.join("other", sequence: 2),
      Bench.leave("room", sequence: 2), Bench.join("room", sequence: 1),
      .join(
        JoinRequest(uid: 0, appID: Fixture.appID, channel: reserved, token: .empty, isRejoin: false)
      ),
    ]
    for token in Set(joinTokens.map(\.bytes) + loginTokens.map(\.bytes)).sorted(by: {
      $0.lexicographicallyPrecedes($1)
    }) {
      messages.append(.renewToken(try Token(validating: token)))
    }
    for token in joinTokens {
      for (app, channel) in [(Fixture.appID, lobby), (Fixture.appID, other), (otherApp, lobby)] {
        for uid: UInt32 in [0, 7, 8] {
          for rejoin in [false, true] {
            messages.append(
              .join(
                JoinRequest(uid: uid, appID: app, channel: channel, token: token, isRejoin: rejoin))
            )
          }
        }
      }
    }
    for token in loginTokens {
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
    for cookie in cookies {
      datagrams += messages.map { Packet(cookie: cookie, message: $0).encoded }
    }
    // Server → client types, which the server must not answer at all.
    let accept = LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: true)
    for message: Message in [
      .sessionUnknown, .tokenExpired, .loginRefuse(code: 7), .channelAck(sequence: 1),
      .loginAccept(accept),
    ] {
      datagrams.append(Packet(cookie: cookies[0], message: message).encoded)
    }
    // Admin KICK and KICK_USER: a forged MAC, another certificate, cut short.
    let kick = AdminKick(channel: lobby, uid: 7, banSeconds: 60, unixTime: wallClock, nonce: 9)
    let kickUser = AdminKickUser(
      userID: Bench.user("alice"), banSeconds: 60, unixTime: wallClock, nonce: 9)
    for sealed in [kick.sealed, kickUser.sealed] {
      var forged = sealed(Fixture.appID, World.certificate)
      forged[forged.count - 1] ^= 1
      datagrams += [forged, sealed(Fixture.appID, Array("cert-2".utf8)), Array(forged.prefix(20))]
    }
    datagrams.append([0x54, 0x41])
    return datagrams
  }

  /// Both profiles on one server, and the datagrams to try on it: under the cookies of
  /// channel and login sessions held and ended, near misses, 0 and the largest.
  static func bothProfiles() throws -> (
    bench: Bench, datagrams: [[UInt8]], addresses: [PeerAddress]
  ) {
    let world = try channelWithMembers()
    #expect(world.server.sessionCount == 3)
    #expect(world.clients[3].lastState == .connectionStateChanged(.failed, .tokenExpired))
    let bench = logins(on: world.server, at: world.now)
    #expect(bench.server.loginSessionCount == 3)
    #expect(bench.messages(to: carol).last == .tokenExpired)
    #expect(bench.messages(to: dave).last == .kick(.remoteLogin))
    let held = world.clients[0].cookie
    let cookies = [
      held, world.clients[3].cookie, held ^ 1, alice, bob, carol, dave, alice ^ 1, 0, .max,
    ]
    let datagrams = try structuredDatagrams(cookies: cookies, wallClock: bench.wallClock)
    // From an address nobody uses, and from other sessions' addresses (a session under
    // client 0's or Alice's cookie must not answer at client 1's or Bob's).
    return (bench, datagrams, [attacker, world.addresses[1], bobAt])
  }

  // MARK: - No amplification, no change

  @Test func noDatagramThatDoesNotAuthenticate_getsMoreBytesBack_orChangesASession() throws {
    let (bench, datagrams, addresses) = try Self.bothProfiles()
    let checked = Self.expectNoAmplification(
      datagrams, from: addresses, server: bench.server, now: bench.now,
      wallClock: bench.wallClock)
    #expect(checked > 7000)
  }

  @Test func randomAndMutatedDatagrams_neverGetMoreBytesBack() throws {
    let (bench, valid, addresses) = try Self.bothProfiles()
    var random = SeededRandom(seed: 21)
    var datagrams: [[UInt8]] = []
    for round in 0..<6000 {
      var bytes = valid[Int(random.next() % UInt64(valid.count))]
      for _ in 0..<(1 + random.next() % 4) {
        bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
      }
      datagrams.append(bytes)
      // Noise after a valid header: any type, or a client type of either profile.
      let length = Int(random.next() % 200)
      var noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if length >= 3 { noise[0...2] = [0x54, 0x48, 0x01] }
      if length >= 4, round % 2 == 1 { noise[3] = UInt8(1 + random.next() % 8) }
      datagrams.append(noise)
    }
    let checked = Self.expectNoAmplification(
      datagrams, from: addresses, server: bench.server, now: bench.now,
      wallClock: bench.wallClock)
    #expect(checked > 30_000)
  }

  // MARK: - Spoofed and replayed datagrams: channel sessions

  @Test func heartbeat_underAHeldCookie_fromAnotherAddress_getsSessionUnknown_andMovesNothing()
    throws
  {
    var world = try Self.channelWithMembers()
    let cookie = world.clients[0].cookie
    let beat = Packet(cookie: cookie, message: .heartbeat(sequence: 5)).encoded
    let out = world.server.receive(
      beat[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
    #expect(
      out == [
        Outgoing(
          address: Self.attacker, bytes: Packet(cookie: cookie, message: .sessionUnknown).encoded)
      ])
    #expect(world.server.table[cookie]?.address == world.addresses[0])
    #expect(world.server.counters.wrongAddress == 1)
    // The member itself is still answered where it is, and stays connected.
    world.run(for: .seconds(10))
    #expect(world.clients[0].state == .connected)
  }

  @Test func leave_underAHeldCookie_fromAnotherAddress_endsNothing() throws {
    var world = try Self.channelWithMembers()
    let leave = Packet(cookie: world.clients[0].cookie, message: .leave).encoded
    let out = world.server.receive(
      leave[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
    #expect(out.isEmpty)
    #expect(world.server.sessionCount == 3)
    #expect(!world.presenceEntries(to: 1).contains { $0.kind == .left && $0.uid == 7 })
  }

  @Test func join_underAHeldCookie_withABadToken_fromAnotherAddress_isRefused_andEndsNothing()
    throws
  {
    var world = try Self.channelWithMembers()
    let cookie = world.clients[0].cookie
    for (channel, uid) in [("lobby", UInt32(7)), ("other", 7), ("lobby", 8)] {
      let request = JoinRequest(
        uid: uid, appID: Fixture.appID,
        channel: try ChannelName(validating: Array(channel.utf8)), token: Fixture.token,
        isRejoin: true)
      let bytes = Packet(cookie: cookie, message: .join(request)).encoded
      let out = world.server.receive(
        bytes[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
      #expect(out.map(\.bytes) == [Packet(cookie: cookie, message: .refuse(.invalidToken)).encoded])
      #expect(world.server.session(cookie: cookie)?.uid == 7)
    }
  }

  @Test func clientWhoseAddressChanged_rejoinsThroughSessionUnknown_andMembersSeeNothing() throws {
    var world = try Self.channelWithMembers()
    let before = world.clients[1].mainNotifications.count
    world.addresses[0] = World.address(500)  // the NAT gave it another port
    world.run(for: .seconds(3))
    #expect(
      world.clients[0].stateChanges.suffix(2) == [
        .connectionStateChanged(.reconnecting, .keepAliveTimeout),
        .connectionStateChanged(.connected, .rejoinSuccess),
      ])
    #expect(world.accepts(to: 0).last?.resumed == true)
    #expect(world.server.table[world.clients[0].cookie]?.address == World.address(500))
    #expect(world.clients[1].mainNotifications.count == before)
  }

  // MARK: - Spoofed and replayed datagrams: login sessions

  @Test func heartbeat_fromAnotherAddress_getsSessionUnknown_noEvents_andMovesNothing() {
    var bench = Self.logins()
    let lastHeard = bench.server.table[Self.bob]?.lastHeard
    let out = bench.send(
      .loginHeartbeat(sequence: 3, eventsReceived: 0), cookie: Self.bob, from: Self.attacker)
    #expect(out.map(\.message) == [.sessionUnknown])
    #expect(out.first?.to == Self.attacker)
    #expect(bench.server.table[Self.bob]?.lastHeard == lastHeard)
    #expect(bench.server.table[Self.bob]?.address == Self.bobAt)
    #expect(bench.server.counters.wrongAddress == 1)
    // Nor can it acknowledge Bob's events for him.
    bench.send(
      .loginHeartbeat(sequence: 4, eventsReceived: 1), cookie: Self.bob, from: Self.attacker)
    #expect(bench.server.table[Self.bob]?.login?.events.pending.count == 1)
  }

  @Test func operation_logout_andRenew_fromAnotherAddress_changeNothing() {
    var bench = Self.logins()
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
    var bench = Self.logins()
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
    var bench = Self.logins()
    let login = Bench.datagram(Bench.login("alice", relogin: true), cookie: Self.alice)
    bench.sendRaw(login, from: Self.attacker)
    #expect(bench.server.table[Self.alice]?.address == Self.attacker)
    let bobEvents = bench.events(to: Self.bob)
    bench.sendRaw(login, from: Self.aliceAt)
    #expect(bench.server.table[Self.alice]?.address == Self.aliceAt)
    #expect(bench.events(to: Self.bob) == bobEvents)
  }

  // MARK: - One cookie, one session

  /// A datagram of one profile's types under the cookie of the other's session finds no
  /// session: it is answered as for an unknown cookie, and the session is not heard.
  @Test func aDatagramOfTheOtherProfile_findsNoSession() throws {
    var bench = Self.logins()
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(uid: 5, expiresAt: 0), isRejoin: false)
    let channelAt = World.address(9)
    bench.send(.join(join), cookie: 50, from: channelAt)
    bench.run(for: .seconds(1))
    let before = Self.snapshot(bench.server)
    let heartbeat = bench.send(.heartbeat(sequence: 1), cookie: Self.alice, from: Self.aliceAt)
    #expect(heartbeat.map(\.message) == [.sessionUnknown])
    #expect(bench.send(.leave, cookie: Self.alice, from: Self.aliceAt).isEmpty)
    let loginBeat = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: 50, from: channelAt)
    #expect(loginBeat.map(\.message) == [.sessionUnknown])
    #expect(bench.send(.logout, cookie: 50, from: channelAt).isEmpty)
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.unknownSession == 4)
    #expect(bench.server.counters.wrongAddress == 0)
  }

  /// A JOIN whose token passes, under a login session's cookie, replaces that session, as a
  /// JOIN for another channel or a LOGIN for another user under a held cookie does: one
  /// cookie names one session.
  @Test func aJoinUnderALoginSessionsCookie_replacesIt() throws {
    var bench = Self.logins()
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(uid: 5, expiresAt: 0), isRejoin: false)
    let out = bench.send(.join(join), cookie: Self.alice, from: Self.aliceAt)
    #expect(
      out.first?.message
        == .accept(JoinAccept(uid: 5, serverTimeMs: 2000, tokenTimeLeftMs: 0, resumed: false)))
    #expect(bench.server.session(cookie: Self.alice)?.uid == 5)
    #expect(bench.server.loginSession(cookie: Self.alice) == nil)
    #expect(bench.events(to: Self.bob).suffix(1) == ["2 left room alice"])
  }

  /// A JOIN refused for a ban changes nothing, as a refused LOGIN: the session under its
  /// cookie (for another channel) stays.
  @Test func aJoinRefusedForABan_endsNotTheSessionUnderItsCookie() throws {
    var world = try Self.channelWithMembers()
    let admin = AdminKick(
      channel: try ChannelName(validating: Array("other".utf8)), uid: 7, banSeconds: 60,
      unixTime: world.wallClock, nonce: 1)
    _ = world.server.admin(
      admin.sealed(appID: Fixture.appID, certificate: World.certificate)[...],
      from: Self.attacker, now: world.now, wallClock: world.wallClock)
    let cookie = world.clients[0].cookie
    let request = JoinRequest(
      uid: 7, appID: Fixture.appID, channel: try ChannelName(validating: Array("other".utf8)),
      token: world.token(channel: "other", uid: 7), isRejoin: false)
    let out = world.server.receive(
      Packet(cookie: cookie, message: .join(request)).encoded[...], from: world.addresses[0],
      now: world.now, wallClock: world.wallClock)
    #expect(out.map(\.bytes) == [Packet(cookie: cookie, message: .kick(.banned)).encoded])
    #expect(world.server.session(cookie: cookie)?.uid == 7)
    #expect(world.server.sessionCount == 3)
  }

  // MARK: - Tokens at the server (the signer's own tests are in TokenSignerTests)

  @Test func join_withEveryByteOfItsTokenChanged_isRefusedInvalidToken() throws {
    var world = World()
    world.addClient()
    let token = world.token(uid: 7).bytes
    for index in token.indices {
      var tampered = token
      tampered[index] = tampered[index] == 0x7E ? 0x21 : tampered[index] + 1
      var server = world.server
      let out = server.receive(
        Packet(
          cookie: 1,
          message: .join(
            JoinRequest(
              uid: 7, appID: Fixture.appID, channel: Fixture.channel,
              token: try Token(validating: tampered), isRejoin: false))
        ).encoded[...], from: Self.attacker, now: .zero, wallClock: world.wallClock)
      #expect(out.map(\.bytes) == [Packet(cookie: 1, message: .refuse(.invalidToken)).encoded])
      #expect(server.sessionCount == 0)
    }
  }

  @Test func join_withATokenSignedForAnotherApp_isRefusedInvalidToken() throws {
    var world = World()
    world.addClient()
    let otherApp = TokenSigner(
      appID: try AppID(validating: Array("app-2".utf8)), certificate: World.certificate)
    let token = try Token(
      validating: otherApp.sign(.channel(Fixture.channel, uid: 0), expiresAt: 0))
    try world.join(0, token: token)
    #expect(world.clients[0].lastState == .connectionStateChanged(.disconnected, .invalidToken))
    #expect(world.server.sessionCount == 0)
  }

  @Test(arguments: ["another channel", "another uid", "another app", "tampered"])
  func renew_withATokenThatDoesNotPass_isRefused_andTheSessionKeepsItsToken(_ kind: String) throws {
    var world = World()
    world.addClient()
    try world.join(0, uid: 7, token: world.token(uid: 7, expiresIn: 100))
    let otherApp = TokenSigner(
      appID: try AppID(validating: Array("app-2".utf8)), certificate: World.certificate)
    var bad = world.token(uid: 7, expiresIn: 9000).bytes
    switch kind {
    case "another channel": bad = world.token(channel: "other", uid: 7).bytes
    case "another uid": bad = world.token(uid: 8).bytes
    case "another app": bad = otherApp.sign(.channel(Fixture.channel, uid: 7), expiresAt: 0)
    default: bad[bad.count - 1] = bad[bad.count - 1] == 0x30 ? 0x31 : 0x30
    }
    try world.renew(0, try Token(validating: bad))
    world.run(for: .seconds(2))
    let refusals = world.messages(to: 0).compactMap {
      if case .tokenRenewed(let r) = $0 { r.refused } else { nil }
    }
    #expect(refusals.first == .invalidToken)
    #expect(world.server.table[world.clients[0].cookie]?.tokenExpiry == World.wallBase + 100)
  }

  /// Raw JOIN and RENEW_TOKEN bytes with one field a byte past its bound: the decoder
  /// refuses them, so the server drops them unanswered and counts them.
  @Test func oversizedFields_areDroppedUnanswered_andCounted() {
    func join(app: Int, channel: Int, token: Int) -> [UInt8] {
      var bytes: [UInt8] = [0x54, 0x48, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0]
      bytes += [UInt8(app)] + [UInt8](repeating: 0x61, count: app)
      bytes += [UInt8(channel)] + [UInt8](repeating: 0x61, count: channel)
      bytes += [UInt8(token >> 8), UInt8(token & 0xFF)] + [UInt8](repeating: 0x61, count: token)
      return bytes
    }
    var renew: [UInt8] = [0x54, 0x48, 0x01, 0x04, 0, 0, 0, 0, 0, 0, 0, 9, 0x02, 0x01]
    renew += [UInt8](repeating: 0x61, count: 513)
    let cases: [[UInt8]] = [
      join(app: 65, channel: 5, token: 0), join(app: 5, channel: 64, token: 0),
      join(app: 5, channel: 5, token: 513), renew,
    ]
    // The same at the bounds decodes: the fields are refused for their size alone.
    #expect((try? Packet.decode(join(app: 64, channel: 63, token: 512)[...])) != nil)
    var server = EdgeServer(config: World.config())
    for bytes in cases {
      #expect(server.receive(bytes[...], from: Self.attacker, now: .zero, wallClock: 0).isEmpty)
    }
    #expect(server.counters.malformed == UInt64(cases.count))
    #expect(server.sessionCount == 0)
  }
}
