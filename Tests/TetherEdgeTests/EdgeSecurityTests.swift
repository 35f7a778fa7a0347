import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// What a datagram that proves nothing can make the server do: answer with no more bytes
/// than it carried (no amplification), change no session, and, for JOINs, spend no more
/// than the source's join limit. docs/PROTOCOL.md, "Security".
struct EdgeSecurityTests {
  static let attacker = World.address(900)

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

  /// The sessions as comparable values: cookie → channel, uid, address, last heard.
  static func snapshot(_ server: EdgeServer) -> [UInt64: String] {
    server.table.records.compactMapValues { session in
      session.member.map {
        "\($0.channel.text) \($0.uid) \(session.address.bytes) \(session.lastHeard.nanoseconds)"
      }
    }
  }

  /// True when `datagram` from `address` authenticates: a client packet under a cookie the
  /// server holds, from the address it holds it at; a JOIN whose token passes for its app,
  /// channel and uid (for a rejoin of a held session: the session's); an admin request
  /// whose MAC verifies.
  static func authenticates(
    _ datagram: [UInt8], from address: PeerAddress, server: EdgeServer, wallClock: UInt64
  ) -> Bool {
    if AdminKick.hasMagic(datagram[...]) {
      return
        (try? AdminKick.open(
          datagram[...], appID: server.config.appID, certificate: server.config.appCertificate))
        != nil
    }
    guard let packet = try? Packet.decode(datagram[...]) else { return false }
    if server.table[packet.cookie]?.address == address { return true }
    guard case .join(let request) = packet.message, request.appID == server.config.appID,
      !EdgeServer.isReserved(request.channel)
    else { return false }
    // A rejoin of a held session (uid 0 or its uid) is checked against the session's grant.
    var grant = TokenGrant.channel(request.channel, uid: request.uid)
    if let held = server.table[packet.cookie]?.member, held.channel == request.channel,
      request.uid == 0 || request.uid == held.uid
    {
      grant = .channel(held.channel, uid: held.uid)
    }
    return (try? server.signer.verify(request.token.bytes, for: grant, wallClock: wallClock))
      != nil
  }

  /// Feeds each datagram, from each address, to a copy of `world`'s server; for every one
  /// that does not authenticate, the bytes sent (to any address) must not exceed the bytes
  /// received, and no session may change. Returns how many were checked.
  @discardableResult
  static func expectNoAmplification(
    _ datagrams: [[UInt8]], from addresses: [PeerAddress], world: World,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> Int {
    let before = snapshot(world.server)
    var checked = 0
    for datagram in datagrams {
      for address in addresses {
        guard
          !authenticates(
            datagram, from: address, server: world.server, wallClock: world.wallClock)
        else { continue }
        var server = world.server
        let out = server.receive(
          datagram[...], from: address, now: world.now, wallClock: world.wallClock)
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

  /// Every client message type, under every kind of cookie, with good and bad tokens.
  static func structuredDatagrams(_ world: World) throws -> [[UInt8]] {
    let held = world.clients[0].cookie
    let ended = world.clients[3].cookie
    let lobby = Fixture.channel
    let other = try ChannelName(validating: Array("other".utf8))
    let otherApp = try AppID(validating: Array("app-2".utf8))
    let otherAppSigner = TokenSigner(appID: otherApp, certificate: World.certificate)
    let tokens: [Token] = [
      .empty, Fixture.token, world.token(uid: 7), world.token(uid: 0),
      world.token(uid: 8), world.token(channel: "other", uid: 7),
      World.token(uid: 7, expiresAt: world.wallClock - 1),
      try Token(validating: otherAppSigner.sign(.channel(lobby, uid: 7), expiresAt: 0)),
      try Token(validating: [UInt8](repeating: 0x41, count: Token.maximumLength)),
    ]
    var messages: [Message] = [.heartbeat(sequence: 1), .heartbeat(sequence: .max), .leave]
    for token in tokens {
      messages.append(.renewToken(token))
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
    let reserved = try ChannelName(validating: Array("$sys".utf8))
    messages.append(
      .join(
        JoinRequest(
          uid: 0, appID: Fixture.appID, channel: reserved, token: .empty, isRejoin: false)))
    var datagrams: [[UInt8]] = []
    for cookie in [held, ended, held ^ 1, 0, .max] {
      datagrams += messages.map { Packet(cookie: cookie, message: $0).encoded }
    }
    // Server → client types, which the server must not answer at all.
    datagrams.append(Packet(cookie: held, message: .sessionUnknown).encoded)
    datagrams.append(Packet(cookie: held, message: .tokenExpired).encoded)
    // Admin: a forged MAC, another certificate, stale, and cut short.
    let kick = AdminKick(
      channel: lobby, uid: 7, banSeconds: 60, unixTime: world.wallClock, nonce: 9)
    var forged = kick.sealed(appID: Fixture.appID, certificate: World.certificate)
    forged[forged.count - 1] ^= 1
    datagrams.append(forged)
    datagrams.append(kick.sealed(appID: Fixture.appID, certificate: Array("cert-2".utf8)))
    datagrams.append(Array(forged.prefix(20)))
    datagrams.append([0x54, 0x41])
    return datagrams
  }

  // MARK: - No amplification

  @Test func noDatagramThatDoesNotAuthenticate_getsMoreBytesBack_orChangesASession() throws {
    let world = try Self.channelWithMembers()
    #expect(world.server.sessionCount == 3)
    #expect(world.clients[3].lastState == .connectionStateChanged(.failed, .tokenExpired))
    let datagrams = try Self.structuredDatagrams(world)
    // From an address nobody uses, and from another member's address (a session under
    // client 0's cookie must not answer at client 1's).
    let checked = Self.expectNoAmplification(
      datagrams, from: [Self.attacker, world.addresses[1]], world: world)
    #expect(checked > 600)
  }

  @Test func randomAndMutatedDatagrams_neverGetMoreBytesBack() throws {
    let world = try Self.channelWithMembers()
    var random = SeededRandom(seed: 21)
    let valid = try Self.structuredDatagrams(world)
    var datagrams: [[UInt8]] = []
    for _ in 0..<3000 {
      var bytes = valid[Int(random.next() % UInt64(valid.count))]
      for _ in 0..<(1 + random.next() % 4) {
        bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
      }
      datagrams.append(bytes)
      let length = Int(random.next() % 200)
      var noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if length >= 3 { noise[0...2] = [0x54, 0x48, 0x01] }
      datagrams.append(noise)
    }
    let checked = Self.expectNoAmplification(
      datagrams, from: [Self.attacker, world.addresses[2]], world: world)
    #expect(checked > 10_000)
  }

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

  // MARK: - Join limit

  static func sockaddrIn(host: UInt8, port: UInt16) -> PeerAddress {
    PeerAddress(
      bytes: [2, 0, UInt8(port >> 8), UInt8(port & 0xFF), 10, 0, 0, host]
        + [UInt8](repeating: 0, count: 8))!
  }

  static func join(cookie: UInt64, token: Token = Fixture.token) -> [UInt8] {
    Packet(
      cookie: cookie,
      message: .join(
        JoinRequest(
          uid: 0, appID: Fixture.appID, channel: Fixture.channel, token: token, isRejoin: false))
    ).encoded
  }

  static func limited(burst: Int, refill: Interval, sources: Int = 4096) -> EdgeServer {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: burst, refill: refill, maxSources: sources)
    return EdgeServer(config: config)
  }

  @Test func joinLimit_defaults_areGenerous_andScaleWithTime() throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1])
    #expect(config.joinLimit == JoinLimit(burst: 1024, refill: .ms(4), maxSources: 4096))
    let scaled = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: 0.01)
    #expect(scaled.joinLimit.refill == Interval(nanoseconds: 40_000))
  }

  @Test func joinsPastTheBurst_getNoAnswer_areCounted_andTheBucketRefills() {
    var server = Self.limited(burst: 4, refill: .seconds(1))
    let source = Self.sockaddrIn(host: 1, port: 4000)
    for i in 0..<6 {
      let out = server.receive(
        Self.join(cookie: UInt64(i + 1))[...], from: source, now: .ms(10), wallClock: World.wallBase
      )
      #expect(out.count == (i < 4 ? 1 : 0), "join \(i)")
    }
    #expect(server.counters.joinsLimited == 2)
    #expect(server.counters.refusedJoins == 4)
    // One more a second later; not two.
    var answered = 0
    for i in 0..<2 {
      answered +=
        server.receive(
          Self.join(cookie: UInt64(10 + i))[...], from: source, now: .ms(1010),
          wallClock: World.wallBase
        ).count
    }
    #expect(answered == 1)
  }

  @Test func joinLimit_isPerHost_otherPortsShareIt_otherHostsDoNot() {
    var server = Self.limited(burst: 2, refill: .seconds(100))
    var answers: [Int] = []
    for (host, port) in [(1, 1000), (1, 1001), (1, 1002), (2, 1000), (2, 1000), (2, 1003)] {
      answers.append(
        server.receive(
          Self.join(cookie: 1)[...], from: Self.sockaddrIn(host: UInt8(host), port: UInt16(port)),
          now: .zero, wallClock: World.wallBase
        ).count)
    }
    #expect(answers == [1, 1, 0, 1, 1, 0])
  }

  @Test func resumeFromTheSessionsOwnAddress_isNeverLimited() throws {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: 1, refill: .seconds(1000))
    var world = World(config: config)
    world.addClient()
    try world.join(0)
    for _ in 0..<5 {
      world.act(0) { s, now, out in s.endpointChanged(now: now, into: &out) }
      #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .rejoinSuccess))
    }
    #expect(world.server.counters.joinsLimited == 0)
    #expect(world.accepts(to: 0).count == 6)
  }

  @Test func defaultLimit_takesEveryDeviceBehindOneNAT_andManyClientsAtOnce() throws {
    var server = EdgeServer(config: World.config())
    var accepted = 0
    // 300 devices behind one address, each joining and then joining again (a new cookie),
    // at the same instant; and 400 clients at their own addresses.
    for round in 0..<2 {
      for device in 0..<300 {
        let out = server.receive(
          Self.join(cookie: UInt64(round * 1000 + device + 1), token: World.token(expiresAt: 0))[
            ...],
          from: Self.sockaddrIn(host: 1, port: UInt16(2000 + device)), now: .ms(UInt64(round)),
          wallClock: World.wallBase)
        accepted += out.contains { (try? Packet.decode($0.bytes[...]))?.isAccept ?? false } ? 1 : 0
      }
    }
    for client in 0..<400 {
      let out = server.receive(
        Self.join(cookie: UInt64(10_000 + client), token: World.token(expiresAt: 0))[...],
        from: World.address(client), now: .ms(2), wallClock: World.wallBase)
      accepted += out.contains { (try? Packet.decode($0.bytes[...]))?.isAccept ?? false } ? 1 : 0
    }
    #expect(accepted == 1000)
    #expect(server.counters.joinsLimited == 0)
  }

  @Test func joinSources_stayBounded_underJoinsFromEverywhere() {
    var server = Self.limited(burst: 2, refill: .seconds(10), sources: 64)
    for i in 0..<10_000 {
      _ = server.receive(
        Self.join(cookie: 1)[...], from: World.address(i % 65_536), now: .ms(UInt64(i)),
        wallClock: World.wallBase)
      #expect(server.tableCounts.joinSources <= 64)
    }
    #expect(server.tableCounts.sessions == 0)
  }

  @Test func peerAddressHost_dropsThePort_ofIPv4AndIPv6_andKeepsOthers() {
    #expect(Self.sockaddrIn(host: 1, port: 5).host == Self.sockaddrIn(host: 1, port: 9).host)
    #expect(Self.sockaddrIn(host: 1, port: 5).host != Self.sockaddrIn(host: 2, port: 5).host)
    #expect(Self.sockaddrIn(host: 1, port: 5).host != Self.sockaddrIn(host: 1, port: 5))
    var v6 = [UInt8](repeating: 0, count: 28)
    v6[0] = 10
    v6[23] = 1
    var v6b = v6
    v6b[3] = 77
    v6b[7] = 1  // flow info
    #expect(PeerAddress(bytes: v6)!.host == PeerAddress(bytes: v6b)!.host)
    #expect(World.address(1).host == World.address(1))
    #expect(World.address(1).host != World.address(2).host)
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

extension Packet {
  fileprivate var isAccept: Bool { if case .accept = message { true } else { false } }
}
