// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// What a datagram that proves nothing can make the server do, whatever the profile of the
/// sessions it names: answer with no more bytes than it carried (no amplification), and
/// change no session (docs/PROTOCOL.md §12.6, §12.13; the join limit: EdgeJoinLimitTests).
/// A datagram proves something only when it opens under a session's keys, or is an admin
/// request under the certificate: forged, replayed, moved, cut and version 1 datagrams
/// prove nothing.
struct EdgeSecurityTests {
  typealias Bench = LoginBench
  static let attacker = World.address(900)
  static let lobby = Bench.channel("lobby")

  // MARK: - The sessions under attack

  /// Three members of "lobby" (client 0 joined as uid 7), and client 3 whose token expired:
  /// its session is an ended one the server answers with TOKEN_EXPIRED.
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
  /// Carol's token expired: her session is answered with TOKEN_EXPIRED.
  static let carol: UInt64 = 0xCA201
  /// Dave logged in again elsewhere: his first session is answered with KICK REMOTE_LOGIN.
  static let dave: UInt64 = 0xDA7E
  /// The login users' addresses, apart from the channel clients'.
  static let aliceAt = World.address(100)
  static let bobAt = World.address(101)

  /// Alice and Bob in the login channel "room" (Bob with an event he has not taken), and
  /// Carol's and Dave's ended sessions, added to `server` at `now`.
  static func logins(
    on server: EdgeServer<SimCrypto> = EdgeServer(
      config: World.config(), crypto: SimCrypto(seed: 1)),
    at now: Instant = .zero
  ) -> Bench {
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
  static func snapshot(_ server: EdgeServer<SimCrypto>) -> [String] {
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

  /// A roster's members and their session ids, in an order that does not depend on the
  /// dictionary's.
  static func members<Member>(_ roster: [Member: UInt64]) -> [String] {
    roster.map { "\($0.key)=\($0.value)" }.sorted()
  }

  /// True when `datagram` proves something: a DATA datagram that opens under the keys of a
  /// session the server holds (whatever its source: a device that moved is answered at its
  /// session's address, and challenged at the new one), or an admin request whose MAC
  /// verifies. Nothing else does: an INIT or a consumed CONFIRM makes no session.
  static func authenticates(_ datagram: [UInt8], server: EdgeServer<SimCrypto>) -> Bool {
    if AdminKick.hasMagic(datagram[...]) {
      return
        (try? AdminRequest.open(
          datagram[...], appID: server.config.appID, certificate: server.config.appCertificate))
        != nil
    }
    guard datagram.first == 0x07, let id = Bench.sessionID(datagram) else { return false }
    var front = server.front
    var payload: [UInt8] = []
    return (try? front.open(datagram[...], id: id, into: &payload)) != nil
  }

  /// Feeds each datagram, from each address, to a copy of `server`; for every one that does
  /// not authenticate, the bytes sent (to any address) must not exceed the bytes received,
  /// and no session may change. Returns how many were checked.
  @discardableResult
  static func expectNoAmplification(
    _ datagrams: [[UInt8]], from addresses: [PeerAddress], server: EdgeServer<SimCrypto>,
    now: Instant, wallClock: UInt64, sourceLocation: SourceLocation = #_sourceLocation
  ) -> Int {
    let before = snapshot(server)
    var checked = 0
    for datagram in datagrams where !authenticates(datagram, server: server) {
      for address in addresses {
        var copy = server
        let out = copy.receive(datagram[...], from: address, now: now, wallClock: wallClock)
        let sent = out.reduce(0) { $0 + $1.bytes.count }
        #expect(
          sent <= datagram.count,
          "\(sent) bytes out for \(datagram.count) in: kind \(datagram.first ?? 0)",
          sourceLocation: sourceLocation)
        #expect(
          snapshot(copy) == before, "a session changed: kind \(datagram.first ?? 0)",
          sourceLocation: sourceLocation)
        checked += 1
      }
    }
    return checked
  }

  /// INITs of both profiles with good and bad tokens (another uid, channel, user or app,
  /// expired, a `W` that does not open), asking for a new session or naming a held one to
  /// resume with a proof that is not its; every handshake datagram and DATA datagram the
  /// bench's clients sent (replays: each opened once already); DATA forged under the ids of
  /// held and ended sessions; the edge's own kinds; forged, foreign and cut admin requests;
  /// and version 1's datagrams of every client message.
  static func structuredDatagrams(bench: Bench, ids: [UInt64]) throws -> [[UInt8]] {
    let wallClock = bench.wallClock
    let other = Bench.channel("other")
    let otherApp = try AppID(validating: Array("app-2".utf8))
    let later = wallClock + 3600
    let minter = try TokenMinter(certificate: World.certificate)
    func token(_ grant: TokenGrant, expiresAt: UInt64 = later, app: AppID = Fixture.appID)
      -> String
    {
      minter.mint(appID: app, grant: grant, expiresAt: expiresAt)
    }
    let channelTokens = [
      token(.channel(lobby, uid: 7)), token(.channel(lobby, uid: 0)),
      token(.channel(lobby, uid: 8)), token(.channel(other, uid: 7)),
      token(.channel(lobby, uid: 7), expiresAt: wallClock - 1),
      token(.channel(lobby, uid: 7), app: otherApp), token(.user(Bench.user("alice"))),
    ]
    let loginTokens = [
      token(.user(Bench.user("alice"))), token(.user(Bench.user("bob"))),
      token(.user(Bench.user("carol"))),
      token(.user(Bench.user("alice")), expiresAt: wallClock - 1),
      token(.user(Bench.user("alice")), app: otherApp), token(.channel(lobby, uid: 0)),
    ]
    var datagrams: [[UInt8]] = []
    func inits(_ request: HandshakeRequest, _ text: String) {
      var device = SecureDevice(token: text, address: attacker)
      datagrams.append(device.initiate(request))
      // Naming a held session, with a proof under keys that are not its.
      let fake = DeviceHandshake<SodiumCrypto>.Resume(
        sessionID: ids[0], key: SodiumCrypto().randomBytes(count: 32))
      datagrams.append(
        try! device.handshake.initiate(token: device.token, request: request, resume: fake)
          .bytes)
      // W altered: it does not open.
      var altered = device.initiate(request)
      altered[120] ^= 0x40
      datagrams.append(altered)
    }
    for text in channelTokens {
      for (app, channel) in [("app-1", "lobby"), ("app-1", "other"), ("app-2", "lobby")] {
        for uid: UInt32 in [0, 7, 8] {
          inits(SecureBench.channelRequest(channel, uid: uid, appID: app), text)
        }
      }
      inits(SecureBench.channelRequest("$sys"), text)
    }
    for text in loginTokens {
      for user in ["alice", "bob", "carol", "dave", "eve"] {
        for relogin in [false, true] {
          inits(SecureBench.loginRequest(user, relogin: relogin), text)
        }
      }
    }
    // Everything the bench's clients sent, again.
    for cookie in bench.handshakes.keys.sorted() {
      datagrams += bench.handshakes[cookie] ?? []
      datagrams += bench.datagrams[cookie] ?? []
    }
    // DATA forged under every id, of every device payload's size, and a RESET-size one.
    for id in ids {
      let header = [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 40, 8)
      for size in [9, 13, 74, 220] {
        datagrams.append(header + [UInt8](repeating: 0x5A, count: size + 16))
      }
      datagrams.append([0x08] + DevicePayloads.bigEndian(id, 8) + [UInt8](repeating: 1, count: 16))
    }
    // The edge's own kinds, which it must not answer at all.
    for (kind, size) in [(0x02, 269), (0x04, 73), (0x05, 18), (0x06, 59), (0x08, 25)] {
      datagrams.append([UInt8(kind)] + [UInt8](repeating: 0, count: size - 1))
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
    // Version 1, removed: every client message under every id, with a token that passes.
    let v1Token = try Token(validating: Array(token(.channel(lobby, uid: 7)).utf8))
    let v1Messages: [Message] = [
      .join(
        JoinRequest(uid: 7, appID: Fixture.appID, channel: lobby, token: v1Token, isRejoin: true)),
      .login(
        LoginRequest(
          appID: Fixture.appID, userID: Bench.user("alice"),
          token: try Token(validating: Array(token(.user(Bench.user("alice"))).utf8)),
          isRelogin: true)),
      .heartbeat(sequence: 1), .leave, .renewToken(v1Token),
      .loginHeartbeat(sequence: 1, eventsReceived: 0), .logout,
      Bench.join("room", sequence: 2), .sessionUnknown, .kick(.banned),
    ]
    for id in ids {
      datagrams += v1Messages.map { Packet(cookie: id, message: $0).encoded }
    }
    return datagrams
  }

  /// Both profiles on one server, and the datagrams to try on it: under the ids of channel
  /// and login sessions held and ended, near misses, 0 and the largest.
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
    let held = world.serverKey(world.clients[0].cookie, of: 0)
    let expired = world.serverKey(world.clients[3].cookie, of: 3)
    let ids = [
      held, expired, held ^ 1, bench.id(alice), bench.id(bob), bench.id(carol), bench.id(dave),
      bench.id(alice) ^ 1, 0, .max,
    ]
    let datagrams = try structuredDatagrams(bench: bench, ids: ids)
    // From an address nobody uses, and from other sessions' addresses (a session of client
    // 0's or Alice's must not answer at client 1's or Bob's).
    return (bench, datagrams, [attacker, world.addresses[1], bobAt])
  }

  // MARK: - No amplification, no change

  @Test func noDatagramThatDoesNotAuthenticate_getsMoreBytesBack_orChangesASession() throws {
    let (bench, datagrams, addresses) = try Self.bothProfiles()
    let checked = Self.expectNoAmplification(
      datagrams, from: addresses, server: bench.server, now: bench.now,
      wallClock: bench.wallClock)
    #expect(checked > 1500)
  }

  @Test func randomAndMutatedDatagrams_neverGetMoreBytesBack() throws {
    let (bench, valid, addresses) = try Self.bothProfiles()
    var random = SeededRandom(seed: 21)
    var datagrams: [[UInt8]] = []
    for round in 0..<2000 {
      var bytes = valid[Int(random.next() % UInt64(valid.count))]
      for _ in 0..<(1 + random.next() % 4) {
        bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(1 + random.next() % 255)
      }
      datagrams.append(bytes)
      // Noise after a kind of version 2 or a version 1 header.
      let length = Int(random.next() % 500)
      var noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if length >= 3, round % 2 == 0 { noise[0...2] = [0x54, 0x48, 0x01] }
      if length >= 1, round % 2 == 1 { noise[0] = UInt8(1 + random.next() % 8) }
      datagrams.append(noise)
    }
    let checked = Self.expectNoAmplification(
      datagrams, from: addresses, server: bench.server, now: bench.now,
      wallClock: bench.wallClock)
    #expect(checked > 10_000)
  }

  // MARK: - Forged, replayed and moved datagrams: channel sessions

  /// DATA under a member's session id that its keys did not seal, from another address:
  /// nothing back, nothing moved; the member goes on where it is.
  @Test func forgedData_underAHeldSession_fromAnotherAddress_movesNothing() throws {
    var world = try Self.channelWithMembers()
    let id = world.serverKey(world.clients[0].cookie, of: 0)
    let forged =
      [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 32, 8)
      + [UInt8](repeating: 0, count: 9 + 16)
    let before = world.server.counters.unopened
    let out = world.server.receive(
      forged[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
    #expect(out.isEmpty)
    #expect(world.server.table[id]?.address == world.addresses[0])
    #expect(world.server.counters.unopened == before + 1)
    #expect(world.server.counters.pathChallenges == 0)
    // The member itself is still answered where it is, and stays connected.
    world.run(for: .seconds(10))
    #expect(world.clients[0].state == .connected)
  }

  /// A LEAVE-sized DATA under a member's session id, forged, from another address: the
  /// session stays and nobody hears it left.
  @Test func forgedLeave_underAHeldSession_fromAnotherAddress_endsNothing() throws {
    var world = try Self.channelWithMembers()
    let id = world.serverKey(world.clients[0].cookie, of: 0)
    let leave =
      [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 32, 8)
      + DevicePayloads.leave + [UInt8](repeating: 0, count: 16)
    let out = world.server.receive(
      leave[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
    #expect(out.isEmpty)
    #expect(world.server.sessionCount == 3)
    world.run(for: .seconds(2))
    #expect(!world.presenceEntries(to: 1).contains { $0.kind == .left && $0.uid == 7 })
  }

  /// INITs naming a held member's session for a resume (with a proof under other keys),
  /// from another address, with tokens that do not grant it (another channel, another uid,
  /// a `W` that does not open): each refused, the member untouched.
  @Test func initsNamingAHeldSession_withTokensThatDoNotPass_areRefused_andEndNothing()
    throws
  {
    var world = try Self.channelWithMembers()
    let id = world.serverKey(world.clients[0].cookie, of: 0)
    let minter = try TokenMinter(certificate: World.certificate)
    let resume = DeviceHandshake<SodiumCrypto>.Resume(
      sessionID: id, key: SodiumCrypto().randomBytes(count: 32))
    for (channel, uid, grant) in [
      ("lobby", UInt32(7), TokenGrant.channel(Bench.channel("other"), uid: 7)),
      ("other", 7, .channel(Bench.channel("other"), uid: 8)),
      ("lobby", 7, .channel(Self.lobby, uid: 8)),
      ("lobby", 7, .channel(Self.lobby, uid: 7)),
    ] {
      var device = SecureDevice(
        token: minter.mint(appID: Fixture.appID, grant: grant, expiresAt: 0),
        address: Self.attacker)
      let request = HandshakeRequest(
        flags: HandshakeRequest.rejoinFlag, uid: uid, appID: Fixture.appID.bytes,
        kind: HandshakeRequest.channelKind, name: Array(channel.utf8))
      var initiation = try device.handshake.initiate(
        token: device.token, request: request, resume: resume
      ).bytes
      let grants = channel == "lobby" && grant == .channel(Self.lobby, uid: 7)
      if grants { initiation[120] ^= 0x40 }  // the one token that grants: altered
      let out = world.server.receive(
        initiation[...], from: Self.attacker, now: world.now, wallClock: world.wallClock)
      #expect(out.map(\.bytes.count) == [grants ? 18 : 59])  // REFUSE_CLEAR or REFUSE_SEALED
      #expect(world.server.session(cookie: id)?.uid == 7)
      #expect(world.server.table[id]?.address == world.addresses[0])
    }
  }

  /// A NAT rebinding (the device's port changes): its next sealed datagram starts a path
  /// challenge at the new address, whose echo moves the session (docs/PROTOCOL.md
  /// §12.11). No rejoin, and the members see nothing.
  @Test func clientWhoseAddressChanged_movesWithItsSession_andMembersSeeNothing() throws {
    var world = try Self.channelWithMembers()
    let before = world.clients[1].mainNotifications.count
    let states = world.clients[0].stateChanges
    world.addresses[0] = World.address(500)  // the NAT gave it another port
    world.run(for: .seconds(3))
    #expect(world.clients[0].stateChanges == states)
    #expect(world.server.counters.migrations == 1)
    let id = world.serverKey(world.clients[0].cookie, of: 0)
    #expect(world.server.table[id]?.address == World.address(500))
    #expect(world.clients[1].mainNotifications.count == before)
  }

  // MARK: - Forged and replayed datagrams: login sessions

  @Test func forgedHeartbeat_fromAnotherAddress_changesNothing_andTakesNoEvents() {
    var bench = Self.logins()
    let id = bench.id(Self.bob)
    let lastHeard = bench.server.table[id]?.lastHeard
    func forged(_ payload: [UInt8]) -> [UInt8] {
      [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 32, 8) + payload
        + [UInt8](repeating: 0, count: 16)
    }
    let before = bench.server.counters.unopened
    #expect(
      bench.sendRaw(
        forged(DevicePayloads.loginHeartbeat(3, session: 0, events: 0)), from: Self.attacker
      ).isEmpty)
    #expect(bench.server.table[id]?.lastHeard == lastHeard)
    #expect(bench.server.table[id]?.address == Self.bobAt)
    // Nor can it acknowledge Bob's events for him.
    #expect(
      bench.sendRaw(
        forged(DevicePayloads.loginHeartbeat(4, session: 0, events: 1)), from: Self.attacker
      ).isEmpty)
    #expect(bench.server.table[id]?.login?.events.pending.count == 1)
    #expect(bench.server.counters.unopened == before + 2)
  }

  /// Bob's own datagrams (a heartbeat, a channel operation) replayed, from his address or
  /// another: each opened once already, so nothing.
  @Test func replayedOperationAndHeartbeat_changeNothing() {
    var bench = Self.logins()
    let before = Self.snapshot(bench.server)
    let replays = bench.datagrams[Self.bob] ?? []
    #expect(replays.count == 2)
    for datagram in replays {
      #expect(bench.sendRaw(datagram, from: Self.attacker).isEmpty)
      #expect(bench.sendRaw(datagram, from: Self.bobAt).isEmpty)
    }
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.replayed == UInt64(2 * replays.count))
  }

  @Test func forgedOperation_logout_andRenew_fromAnotherAddress_changeNothing() {
    var bench = Self.logins()
    let before = Self.snapshot(bench.server)
    let id = bench.id(Self.alice)
    let renewal = try! TokenV2(
      text: Bench.token("alice", expiresAt: World.wallBase + 5).bytes[...], crypto: SodiumCrypto())
    for payload in [
      DevicePayloads.channelOperation(session: 0, sequence: 2, kind: .leave, channel: "room"),
      DevicePayloads.logout, DevicePayloads.renew(renewal),
    ] {
      let forged =
        [0x07] + DevicePayloads.bigEndian(id, 8) + DevicePayloads.bigEndian(1 << 32, 8) + payload
        + [UInt8](repeating: 0, count: 16)
      #expect(bench.sendRaw(forged, from: Self.attacker).isEmpty)
    }
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.unopened == 3)
  }

  /// A relogin naming Alice's session with a token that does not grant it (Mallory's; an
  /// expired one of hers), even with her resume proof, changes nothing: refused, from her
  /// address or another.
  @Test func relogin_withATokenThatDoesNotPass_isRefused_andMovesNothing() {
    var bench = Self.logins()
    let before = Self.snapshot(bench.server)
    let out = bench.send(
      Bench.login("alice", token: Bench.token("mallory"), relogin: true), cookie: Self.alice,
      from: Self.attacker)
    #expect(out.map(\.message) == [.loginRefuse(code: 5)])
    #expect(Self.snapshot(bench.server) == before)
    let expired = bench.send(
      Bench.login("alice", token: Bench.token("alice", expiresAt: 1), relogin: true),
      cookie: Self.alice, from: Self.aliceAt)
    #expect(expired.map(\.message) == [.loginRefuse(code: 6)])
    #expect(Self.snapshot(bench.server) == before)
  }

  /// Version 1 let a sender that saw a valid LOGIN move the session by replaying it. Now
  /// Alice's INIT replayed from another address gets one RESPONSE there (smaller), and her
  /// CONFIRM replayed from there is refused (its ticket is bound to her address): the
  /// session stays where it is, and nobody notices.
  @Test func aReplayedLogin_movesNothing() {
    var bench = Self.logins()
    let before = Self.snapshot(bench.server)
    let handshake = bench.handshakes[Self.alice] ?? []
    #expect(handshake.count == 2)
    let bobEvents = bench.events(to: Self.bob)
    for datagram in handshake {
      let out = bench.server.receive(
        datagram[...], from: Self.attacker, now: bench.now, wallClock: bench.wallClock)
      #expect(out.reduce(0) { $0 + $1.bytes.count } <= datagram.count)
    }
    #expect(bench.server.table[bench.id(Self.alice)]?.address == Self.aliceAt)
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.wrongAddress == 1)
    #expect(bench.events(to: Self.bob) == bobEvents)
  }

  // MARK: - One session, one profile

  /// A datagram of one profile's under the other profile's session finds no session: a
  /// heartbeat is answered as for an unknown session, and the session is not heard.
  @Test func aDatagramOfTheOtherProfile_findsNoSession() throws {
    var bench = Self.logins()
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(.channel(Fixture.channel, uid: 5), expiresAt: 0), isRejoin: false)
    let channelAt = World.address(9)
    #expect(Bench.isAccepted(bench.send(.join(join), cookie: 50, from: channelAt)))
    bench.run(for: .seconds(1))
    let before = Self.snapshot(bench.server)
    let unknown = bench.server.counters.unknownSession
    let heartbeat = bench.send(.heartbeat(sequence: 1), cookie: Self.alice, from: Self.aliceAt)
    #expect(heartbeat.map(\.message) == [.sessionUnknown])
    #expect(bench.send(.leave, cookie: Self.alice, from: Self.aliceAt).isEmpty)
    let loginBeat = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: 50, from: channelAt)
    #expect(loginBeat.map(\.message) == [.sessionUnknown])
    #expect(bench.send(.logout, cookie: 50, from: channelAt).isEmpty)
    #expect(Self.snapshot(bench.server) == before)
    #expect(bench.server.counters.unknownSession == unknown + 4)
    #expect(bench.server.counters.wrongAddress == 0)
  }

  /// A JOIN from a login session's device (its handshake naming that session to resume)
  /// makes a channel session of its own: a session of one profile is never resumed as the
  /// other's, and the login session stays.
  @Test func aJoinFromALoginSessionsDevice_makesItsOwnSession() throws {
    var bench = Self.logins()
    let loginID = bench.id(Self.alice)
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(.channel(Fixture.channel, uid: 5), expiresAt: 0), isRejoin: false)
    let out = bench.send(.join(join), cookie: Self.alice, from: Self.aliceAt)
    #expect(
      out.first?.message
        == .accept(JoinAccept(uid: 5, serverTimeMs: 2000, tokenTimeLeftMs: 0, resumed: false)))
    #expect(bench.id(Self.alice) != loginID)
    #expect(bench.server.session(cookie: bench.id(Self.alice))?.uid == 5)
    #expect(bench.server.loginSession(cookie: loginID)?.userID == Bench.user("alice"))
    #expect(bench.events(to: Self.bob).suffix(1) == ["1 joined room alice"])
  }

  /// A JOIN refused for a ban changes nothing: the member's session (for another channel)
  /// stays.
  @Test func aJoinRefusedForABan_endsNotTheDevicesSession() throws {
    var bench = Bench()
    let join = { (channel: String) in
      Message.join(
        JoinRequest(
          uid: 7, appID: Fixture.appID, channel: Bench.channel(channel),
          token: World.token(.channel(Bench.channel(channel), uid: 7), expiresAt: 0),
          isRejoin: false))
    }
    #expect(Bench.isAccepted(bench.send(join("lobby"), cookie: 1, from: Self.aliceAt)))
    let admin = AdminKick(
      channel: Bench.channel("other"), uid: 7, banSeconds: 60, unixTime: bench.wallClock,
      nonce: 1)
    _ = bench.server.admin(
      admin.sealed(appID: Fixture.appID, certificate: World.certificate)[...],
      from: Self.attacker, now: bench.now, wallClock: bench.wallClock)
    let held = bench.id(1)
    let out = bench.send(join("other"), cookie: 1, from: Self.aliceAt)
    #expect(out.map(\.message) == [.kick(.banned)])
    #expect(bench.server.session(cookie: held)?.uid == 7)
    #expect(bench.server.sessionCount == 1)
  }

  // MARK: - Tokens at the server

  /// Every byte of an INIT's `W` (the token's public header and sealed part) changed: the
  /// token does not open, REFUSE_CLEAR (18 bytes) each time, no session.
  @Test func anInit_withEveryByteOfItsTokenChanged_getsRefuseClear() throws {
    var bench = SecureBench()
    var device = bench.device(.channel(Self.lobby, uid: 7))
    let initiation = device.initiate(SecureBench.channelRequest(uid: 7))
    for index in 50..<269 {
      var tampered = initiation
      tampered[index] ^= 0x01
      let out = bench.sendUnvalidated(tampered, from: device.address)
      #expect(out.map(\.bytes.count) == [18], "byte \(index)")
    }
    #expect(bench.server.sessionCount == 0)
    #expect(bench.server.counters.refusedHandshakes == 219)
  }

  @Test func join_withATokenMintedForAnotherApp_isRefusedInvalidToken() throws {
    var world = World()
    world.addClient()
    let minter = try TokenMinter(certificate: World.certificate)
    let token = try Token(
      validating: Array(
        minter.mint(
          appID: try AppID(validating: Array("app-2".utf8)),
          grant: .channel(Fixture.channel, uid: 0), expiresAt: 0
        ).utf8))
    try world.join(0, token: token)
    #expect(world.clients[0].lastState == .connectionStateChanged(.disconnected, .invalidToken))
    #expect(world.server.sessionCount == 0)
  }

  @Test(arguments: ["another channel", "another uid", "another app", "tampered"])
  func renew_withATokenThatDoesNotPass_isRefused_andTheSessionKeepsItsToken(_ kind: String) throws {
    var world = World()
    world.addClient()
    try world.join(0, uid: 7, token: world.token(uid: 7, expiresIn: 100))
    let minter = try TokenMinter(certificate: World.certificate)
    var bad = world.token(uid: 7, expiresIn: 9000).bytes
    switch kind {
    case "another channel": bad = world.token(channel: "other", uid: 7).bytes
    case "another uid": bad = world.token(uid: 8).bytes
    case "another app":
      bad = Array(
        minter.mint(
          appID: try AppID(validating: Array("app-2".utf8)),
          grant: .channel(Fixture.channel, uid: 7), expiresAt: 0
        ).utf8)
    default:
      // A character of the sealed part, still base64url: the text parses, `W` does not open.
      bad[200] = bad[200] == 0x41 ? 0x42 : 0x41
    }
    try world.renew(0, try Token(validating: bad))
    world.run(for: .seconds(2))
    let refusals = world.messages(to: 0).compactMap {
      if case .tokenRenewed(let r) = $0 { r.refused } else { nil }
    }
    #expect(refusals.first == .invalidToken)
    let id = world.serverKey(world.clients[0].cookie, of: 0)
    #expect(world.server.table[id]?.tokenExpiry == World.wallBase + 100)
  }

  /// A request with a field a byte past its bound (a channel name of 64) opens under its
  /// key but is no request: dropped unanswered, counted. Version 1's JOIN and RENEW_TOKEN
  /// with oversized fields are dropped as version 1.
  @Test func oversizedFields_areDroppedUnanswered_andCounted() {
    var bench = SecureBench()
    var device = bench.device(.channel(Self.lobby, uid: 7))
    let long = String(repeating: "a", count: 64)
    let out = bench.sendUnvalidated(
      device.initiate(SecureBench.channelRequest(long, uid: 7)), from: device.address)
    #expect(out.isEmpty)
    #expect(bench.server.counters.unopened == 1)
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
    for bytes in cases {
      #expect(bench.send(bytes, from: Self.attacker).isEmpty)
    }
    #expect(bench.server.counters.versionOneDropped == UInt64(cases.count))
    #expect(bench.server.sessionCount == 0)
  }
}
