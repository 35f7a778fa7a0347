// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The per-source join limit (docs/PROTOCOL.md, "Join rate limit"): one bucket per source
/// host for JOINs and LOGINs together; a limited JOIN gets no answer, a limited LOGIN one
/// LOGIN_REFUSE 2 REJECTED, before any token check; a session's own address is not limited.
struct EdgeJoinLimitTests {
  typealias Bench = LoginBench
  static let attacker = World.address(900)

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

  static func limited(burst: Int, refill: Interval, sources: Int = 4096) -> SodiumEdgeServer {
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

  // MARK: - LOGIN

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

  @Test func login_pastTheSourcesLimit_isRefusedRejected_butItsOwnSessionIsNot() throws {
    var config = World.config()
    config.joinLimit = JoinLimit(burst: 2, refill: .seconds(10))
    var bench = Bench(config: config)
    let address = Bench.address(0)
    #expect(bench.send(Bench.login("u1"), cookie: 1, from: address).map(\.message).count == 1)
    #expect(bench.send(Bench.login("u2"), cookie: 2, from: address).count == 1)
    let third = bench.send(Bench.login("u3"), cookie: 3, from: address)
    #expect(third.map(\.message) == [.loginRefuse(code: 2)])
    #expect(bench.server.counters.joinsLimited == 1)
    // A repeat of a held session's LOGIN from its own address is not limited.
    let repeated = bench.send(Bench.login("u1"), cookie: 1, from: address)
    try #require(Bench.isAccepted(repeated), "expected LOGIN_ACCEPT, got \(repeated)")
    // Another source has its own bucket.
    let elsewhere = bench.send(Bench.login("u3"), cookie: 3, from: Bench.address(5))
    try #require(Bench.isAccepted(elsewhere), "another source was limited")
    #expect(bench.server.loginSessionCount == 3)
  }
}

extension Packet {
  fileprivate var isAccept: Bool { if case .accept = message { true } else { false } }
}
