// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The per-source join limit (docs/PROTOCOL.md, "Join rate limit", §12.6 step 5): one
/// bucket per source host for channel and login sessions together, charged at the CONFIRM,
/// once the address is validated (spoofed INITs spend nothing); a limited CONFIRM, a
/// channel's or a login's, gets no answer and its ticket is not consumed (the device
/// repeats it, then makes a new INIT, and is taken once the bucket refills); a resume from
/// a session's own address is not limited.
struct EdgeJoinLimitTests {
  typealias Bench = LoginBench
  static let attacker = World.address(900)

  static func sockaddrIn(host: UInt8, port: UInt16) -> PeerAddress {
    SecureBench.address(host, port: port)
  }

  static func limited(burst: Int, refill: Interval, sources: Int = 4096) -> SecureBench {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: burst, refill: refill, maxSources: sources)
    return SecureBench(config: config)
  }

  /// A device of `bench` at `address` with a token for any uid of the lobby, its handshake
  /// made (INIT, RESPONSE), its CONFIRM not sent.
  static func handshaken(_ bench: inout SecureBench, at address: PeerAddress) -> SecureDevice {
    var device = SecureDevice(
      token: bench.token(.channel(Fixture.channel, uid: 0)), address: address)
    bench.handshake(&device, SecureBench.channelRequest())
    return device
  }

  @Test func joinLimit_defaults_areGenerous_andScaleWithTime() throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1])
    #expect(config.joinLimit == JoinLimit(burst: 1024, refill: .ms(4), maxSources: 4096))
    let scaled = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: 0.01)
    #expect(scaled.joinLimit.refill == Interval(nanoseconds: 40_000))
  }

  @Test func joinsPastTheBurst_getNoAnswer_areCounted_andTheBucketRefills() {
    var bench = Self.limited(burst: 4, refill: .seconds(1))
    var devices: [SecureDevice] = []
    for i in 0..<6 {
      var device = Self.handshaken(&bench, at: Self.sockaddrIn(host: 1, port: 4000 + UInt16(i)))
      let accepted = bench.confirm(&device).first?.type == 0x81
      #expect(accepted == (i < 4), "join \(i)")
      devices.append(device)
    }
    #expect(bench.server.counters.joinsLimited == 2)
    #expect(bench.server.sessionCount == 4)
    // One more a second later (the device repeats its CONFIRM); not two.
    bench.now = bench.now + .seconds(1)
    var answered = 0
    for i in 4..<6 { answered += bench.confirm(&devices[i]).first?.type == 0x81 ? 1 : 0 }
    #expect(answered == 1)
    #expect(bench.server.counters.joinsLimited == 3)
  }

  @Test func joinLimit_isPerHost_otherPortsShareIt_otherHostsDoNot() {
    var bench = Self.limited(burst: 2, refill: .seconds(100))
    var answers: [Int] = []
    for (host, port) in [(1, 1000), (1, 1001), (1, 1002), (2, 1000), (2, 1000), (2, 1003)] {
      var device = Self.handshaken(
        &bench, at: Self.sockaddrIn(host: UInt8(host), port: UInt16(port)))
      answers.append(bench.confirm(&device).first?.type == 0x81 ? 1 : 0)
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
    var bench = SecureBench()
    var accepted = 0
    // 300 devices behind one address, each joining and then joining again (a new session),
    // at the same instant; and 400 clients at their own addresses.
    let start = bench.now
    for round in 0..<2 {
      bench.now = start + .ms(UInt64(round))
      for device in 0..<300 {
        var one = Self.handshaken(
          &bench, at: Self.sockaddrIn(host: 1, port: UInt16(2000 + device)))
        accepted += bench.confirm(&one).first?.type == 0x81 ? 1 : 0
      }
    }
    bench.now = start + .ms(2)
    for client in 0..<400 {
      var one = Self.handshaken(
        &bench, at: Self.sockaddrIn(host: UInt8(2 + client % 200), port: UInt16(3000 + client)))
      accepted += bench.confirm(&one).first?.type == 0x81 ? 1 : 0
    }
    #expect(accepted == 1000)
    #expect(bench.server.counters.joinsLimited == 0)
  }

  /// Joins from 250 hosts, three from each (past its burst of 2), against a table of 64
  /// sources: the table never holds more. (2,000 joins once: each join's presence goes to
  /// every member of the one channel, so the cost grew with the square of the count, 116 s
  /// under ASan on a busy machine, for no more of the property.)
  @Test func joinSources_stayBounded_underJoinsFromEverywhere() {
    var bench = Self.limited(burst: 2, refill: .seconds(10), sources: 64)
    for i in 0..<750 {
      bench.now = bench.now + .ms(1)
      var device = Self.handshaken(
        &bench, at: Self.sockaddrIn(host: UInt8(i % 250 + 1), port: UInt16(1000 + i)))
      _ = bench.confirm(&device)
      #expect(bench.server.tableCounts.joinSources <= 64)
    }
    #expect(bench.server.sessionCount > 0)
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

  // MARK: - LOGIN

  /// A flood of LOGINs whose token does not grant them, from one source: each INIT gets its
  /// one refusal (smaller than it), and none spends the source's join budget, which is
  /// charged only at a CONFIRM (§12.6): the source's own logins are taken up to its burst,
  /// then get no answer.
  @Test func aLoginFlood_fromOneSource_spendsNothingOfItsBudget() {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: 4, refill: .seconds(100))
    var bench = Bench(config: config)
    var answers: [Message] = []
    for n in 0..<50 {
      let login = Bench.login("alice", token: Bench.token("nobody"))
      answers += bench.send(login, cookie: UInt64(1000 + n), from: Self.attacker).map(\.message)
    }
    #expect(answers == Array(repeating: .loginRefuse(code: 5), count: 50))
    #expect(bench.server.counters.joinsLimited == 0)
    var taken: [Message] = []
    for n in 0..<5 {
      taken += bench.send(Bench.login("user\(n)"), cookie: UInt64(n), from: Self.attacker).map(
        \.message)
    }
    #expect(taken.count == 4)
    #expect(taken.allSatisfy { if case .loginAccept = $0 { true } else { false } })
    #expect(bench.server.counters.joinsLimited == 1)
  }

  /// A login past its source's budget is not refused (a login failure for every device
  /// behind a NAT that came back at once after an edge restart): it gets no answer, as a
  /// channel join does, and is taken once the bucket has refilled.
  @Test func login_pastTheSourcesLimit_getsNoAnswer_untilTheBucketRefills_butItsOwnSessionIsNot()
    throws
  {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: 2, refill: .seconds(10))
    var bench = Bench(config: config)
    let address = Bench.address(0)
    #expect(bench.send(Bench.login("u1"), cookie: 1, from: address).map(\.message).count == 1)
    #expect(bench.send(Bench.login("u2"), cookie: 2, from: address).count == 1)
    let third = bench.send(Bench.login("u3"), cookie: 3, from: address)
    #expect(third.isEmpty, "a limited login was answered: \(third)")
    #expect(bench.server.counters.joinsLimited == 1 && bench.server.counters.refusedLogins == 0)
    #expect(bench.server.loginSessionCount == 2)
    // Tried again once the bucket holds a token: taken.
    bench.now = bench.now + .seconds(10)
    let again = bench.send(Bench.login("u3"), cookie: 4, from: address)
    try #require(Bench.isAccepted(again), "expected LOGIN_ACCEPT after the refill, got \(again)")
    // A repeat of a held session's LOGIN from its own address is not limited.
    let repeated = bench.send(Bench.login("u1"), cookie: 1, from: address)
    try #require(Bench.isAccepted(repeated), "expected LOGIN_ACCEPT, got \(repeated)")
    // Another source has its own bucket.
    let elsewhere = bench.send(Bench.login("u5"), cookie: 5, from: Bench.address(5))
    try #require(Bench.isAccepted(elsewhere), "another source was limited")
    #expect(bench.server.loginSessionCount == 4)
  }
}
