// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The edge's answers to an INIT it does not take (docs/PROTOCOL.md §12.6 rules 2 to 5),
/// the caps (§12.12), and the cookie under load. Every answer goes to an address the edge
/// has not validated, so each is checked to be no larger than the INIT.
struct EdgeSecureRefusalTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  /// The device's verdict on the one answer to `request` with a token of `grant`.
  static func refusal(
    _ grant: TokenGrant, _ request: HandshakeRequest, expiresAt: UInt64 = 0,
    in bench: inout Bench
  ) -> DeviceHandshake<SodiumCrypto>.Refusal? {
    var device = bench.device(grant, host: 9, expiresAt: expiresAt)
    let answers = bench.sendUnvalidated(device.initiate(request), from: device.address)
    guard answers.count == 1, case .refused(let refusal)? = try? device.take(answers[0].bytes)
    else { return nil }
    return refusal
  }

  @Test func aTokenOfAnotherCertificate_getsRefuseClear() throws {
    var bench = Bench()
    let other = TokenMinter(
      crypto: SodiumCrypto(), keys: try CertificateKeys(certificate: Array("cert-2".utf8)))
    var device = SecureDevice(
      token: other.mint(appID: Fixture.appID, grant: .channel(Self.lobby, uid: 0), expiresAt: 0),
      address: Bench.address(1))
    let answers = bench.sendUnvalidated(
      device.initiate(Bench.channelRequest()), from: device.address)
    #expect(answers.map(\.bytes.count) == [18])
    guard case .refused(.tokenNotOpened)? = try? device.take(answers[0].bytes) else {
      Issue.record("\(answers)")
      return
    }
    #expect(bench.server.counters.refusedHandshakes == 1)
  }

  @Test func eachCheck_isRefusedSealed_withItsReason() throws {
    var bench = Bench()
    let wall = bench.wallClock
    let channel: TokenGrant = .channel(Self.lobby, uid: 0)
    #expect(
      Self.refusal(channel, Bench.channelRequest(appID: "app-2"), in: &bench)
        == .sealed(reason: 1, detail: 0))
    #expect(
      Self.refusal(
        .channel(Bench.channel("$sys"), uid: 0), Bench.channelRequest("$sys"), in: &bench)
        == .sealed(reason: 2, detail: 0))
    #expect(
      Self.refusal(channel, Bench.channelRequest("other"), in: &bench)
        == .sealed(reason: 3, detail: 0))
    #expect(
      Self.refusal(.channel(Self.lobby, uid: 7), Bench.channelRequest(uid: 8), in: &bench)
        == .sealed(reason: 3, detail: 0))
    #expect(
      Self.refusal(channel, Bench.channelRequest(), expiresAt: wall, in: &bench)
        == .sealed(reason: 4, detail: 0))
    // The authenticated list of versions lacks 2: REJECTED, no retry can help.
    #expect(
      Self.refusal(channel, Bench.channelRequest(versions: [3]), in: &bench)
        == .sealed(reason: 5, detail: 0))
    // Logins: the login error codes.
    let alice: TokenGrant = .user(Bench.user("alice"))
    var login = Bench.loginRequest("alice")
    login.appID = Array("app-2".utf8)
    #expect(Self.refusal(alice, login, in: &bench) == .sealed(reason: 4, detail: 0))
    #expect(
      Self.refusal(alice, Bench.loginRequest("bob"), in: &bench) == .sealed(reason: 5, detail: 0))
    #expect(
      Self.refusal(alice, Bench.loginRequest("alice"), expiresAt: wall, in: &bench)
        == .sealed(reason: 6, detail: 0))
    // A channel token for a login, and the other way round.
    #expect(
      Self.refusal(channel, Bench.loginRequest("alice"), in: &bench)
        == .sealed(reason: 5, detail: 0))
    #expect(
      Self.refusal(alice, Bench.channelRequest(), in: &bench) == .sealed(reason: 3, detail: 0))
    #expect(bench.server.sessionCount + bench.server.loginSessionCount == 0)
    #expect(bench.server.counters.refusedHandshakes == 11)
  }

  @Test func aBannedUidOrUser_isRefusedBanned() throws {
    var bench = Bench()
    let wall = bench.wallClock
    _ = bench.send(
      AdminKick(channel: Self.lobby, uid: 5, banSeconds: 60, unixTime: wall, nonce: 1)
        .sealed(appID: Fixture.appID, certificate: World.certificate),
      from: PeerAddress(bytes: [0xAD])!)
    _ = bench.send(
      AdminKickUser(userID: Bench.user("alice"), banSeconds: 60, unixTime: wall, nonce: 2)
        .sealed(appID: Fixture.appID, certificate: World.certificate),
      from: PeerAddress(bytes: [0xAD])!)
    #expect(
      Self.refusal(.channel(Self.lobby, uid: 5), Bench.channelRequest(uid: 5), in: &bench)
        == .sealed(reason: 6, detail: 0))
    #expect(
      Self.refusal(.user(Bench.user("alice")), Bench.loginRequest("alice"), in: &bench)
        == .sealed(reason: 7, detail: 0))
    // A uid-0 join is never banned: it is given a uid that is not.
    var device = bench.device(.channel(Self.lobby, uid: 0))
    guard case .accept(let accept)? = bench.connect(&device, Bench.channelRequest()).first?.message
    else {
      Issue.record("no ACCEPT")
      return
    }
    #expect(accept.uid == 1_000_000)
  }

  // MARK: - Caps (§12.12)

  @Test func aFullChannel_isRefusedAtTheInit_rejectedWithDetailOne() throws {
    var bench = try Bench(maxChannelMembers: 1)
    var first = bench.device(.channel(Self.lobby, uid: 0))
    bench.connect(&first, Bench.channelRequest())
    #expect(
      Self.refusal(.channel(Self.lobby, uid: 0), Bench.channelRequest(), in: &bench)
        == .sealed(reason: 5, detail: 1))
    // Another channel is not full; taking over a uid adds nobody.
    var other = bench.device(.channel(Bench.channel("hall"), uid: 0), host: 2)
    #expect(bench.connect(&other, Bench.channelRequest("hall")).first?.type == 0x81)
    var takeover = bench.device(.channel(Self.lobby, uid: 1_000_000), host: 3)
    #expect(bench.connect(&takeover, Bench.channelRequest(uid: 1_000_000)).first?.type == 0x81)
    #expect(bench.server.members(of: Self.lobby) == [1_000_000])
  }

  @Test func aFullApp_isRefusedAtTheInit_rejectedWithDetailTwo() throws {
    var bench = try Bench(maxAppSessions: 1)
    var first = bench.device(.user(Bench.user("alice")))
    bench.connect(&first, Bench.loginRequest("alice"))
    #expect(
      Self.refusal(.user(Bench.user("bob")), Bench.loginRequest("bob"), in: &bench)
        == .sealed(reason: 2, detail: 2))
    #expect(
      Self.refusal(.channel(Self.lobby, uid: 0), Bench.channelRequest(), in: &bench)
        == .sealed(reason: 5, detail: 2))
  }

  /// The INIT's check saves work; the CONFIRM's decides: two INITs pass while the channel
  /// has room for one, and the second CONFIRM gets a sealed REFUSE.
  @Test func theCapAtTheConfirm_decides() throws {
    var bench = try Bench(maxChannelMembers: 1)
    var first = bench.device(.channel(Self.lobby, uid: 0))
    var second = bench.device(.channel(Self.lobby, uid: 0), host: 2)
    bench.handshake(&first, Bench.channelRequest())
    bench.handshake(&second, Bench.channelRequest())
    #expect(bench.confirm(&first).first?.type == 0x81)
    let refused = bench.confirm(&second)
    #expect(refused.map(\.bytes) == [[0x82, 5, 1]])
    #expect(bench.server.members(of: Self.lobby).count == 1)
    // The refused session's keys are gone: its DATA names nothing the edge holds.
    #expect(bench.send(second.seal(DevicePayloads.heartbeat(1)), from: second.address).isEmpty)
  }

  // MARK: - Under load (§12.6 rule 2)

  @Test func underLoad_anInitWithoutMac2_getsACookie_andTheRetryWithIt_isTaken() throws {
    var bench = try Bench(handshakeRate: 1)
    var first = bench.device(.channel(Self.lobby, uid: 0))
    bench.connect(&first, Bench.channelRequest())
    // The bucket (1 a second) is empty now.
    var device = bench.device(.channel(Self.lobby, uid: 0), host: 2)
    let answers = bench.sendUnvalidated(
      device.initiate(Bench.channelRequest()), from: device.address)
    #expect(answers.map(\.bytes.count) == [73])
    guard case .cookie? = try? device.take(answers[0].bytes) else {
      Issue.record("no COOKIE_REPLY")
      return
    }
    #expect(bench.server.counters.cookieReplies == 1)
    // The retry carries mac2 under the cookie: it is taken at once, still under load.
    let accept = bench.connect(&device, Bench.channelRequest())
    #expect(accept.first?.type == 0x81)
    #expect(bench.server.members(of: Self.lobby).count == 2)
    // Under load, a token that does not open gets nothing (no REFUSE_CLEAR to a flood).
    let other = TokenMinter(
      crypto: SodiumCrypto(), keys: try CertificateKeys(certificate: Array("cert-2".utf8)))
    var stranger = SecureDevice(
      token: other.mint(appID: Fixture.appID, grant: .channel(Self.lobby, uid: 0), expiresAt: 0),
      address: Bench.address(3))
    #expect(
      bench.sendUnvalidated(stranger.initiate(Bench.channelRequest()), from: stranger.address)
        .isEmpty)
    // A second later the bucket has a token again: no cookie needed.
    _ = bench.advance(by: .seconds(1))
    var later = bench.device(.channel(Self.lobby, uid: 0), host: 4)
    #expect(bench.connect(&later, Bench.channelRequest()).first?.type == 0x81)
    #expect(bench.server.counters.cookieReplies == 1)
  }

  /// A cookie proves its own address only: the same mac2 from another port is a fresh
  /// INIT under load, answered with a cookie of its own.
  @Test func aCookie_isBoundToItsAddress() throws {
    var bench = try Bench(handshakeRate: 1)
    var first = bench.device(.channel(Self.lobby, uid: 0))
    bench.connect(&first, Bench.channelRequest())
    var device = bench.device(.channel(Self.lobby, uid: 0), host: 2)
    let reply = bench.sendUnvalidated(
      device.initiate(Bench.channelRequest()), from: device.address)
    _ = try device.take(reply[0].bytes)
    let retry = device.initiate(Bench.channelRequest())
    let moved = bench.sendUnvalidated(retry, from: Bench.address(2, port: 40_001))
    #expect(moved.map(\.bytes.count) == [73])
    #expect(bench.server.counters.cookieReplies == 2)
    #expect(bench.sendUnvalidated(retry, from: device.address).map(\.bytes.count) == [269])
  }

  /// A spoofed flood of INITs charges no address's join budget: only validated addresses
  /// are charged, so the devices behind one NAT still join.
  @Test func spoofedInits_doNotSpendTheJoinBudget() throws {
    var config = try EdgeConfig(appID: Fixture.appID, appCertificate: World.certificate)
    config.joinLimit = JoinLimit(burst: 1, refill: .seconds(3600))
    var bench = Bench(config: config)
    var spoofer = bench.device(.channel(Self.lobby, uid: 0), host: 1, port: 1)
    for _ in 0..<10 {
      #expect(
        bench.sendUnvalidated(spoofer.initiate(Bench.channelRequest()), from: spoofer.address)
          .count == 1)
    }
    var device = bench.device(.channel(Self.lobby, uid: 0), host: 1, port: 2)
    #expect(bench.connect(&device, Bench.channelRequest()).first?.type == 0x81)
    // The budget of that host is spent now: the next CONFIRM from it, a channel's or a
    // login's, is dropped unconsumed (its device repeats it), not refused.
    var next = bench.device(.channel(Self.lobby, uid: 0), host: 1, port: 3)
    #expect(bench.connect(&next, Bench.channelRequest()).isEmpty)
    var login = bench.device(.user(Bench.user("alice")), host: 1, port: 4)
    #expect(bench.connect(&login, Bench.loginRequest("alice")).isEmpty)
    #expect(bench.server.counters.joinsLimited == 2 && bench.server.counters.refusedLogins == 0)
  }
}
