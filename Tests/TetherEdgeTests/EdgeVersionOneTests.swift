// SPDX-License-Identifier: Apache-2.0
import Logging
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Version 1 is removed (docs/PROTOCOL.md §12.14): a version 1 datagram (`54 48 01` …) gets
/// nothing back and changes nothing, whatever it asks and whatever session it names; it is
/// counted (`v1-dropped`), and the log says why at most once per 10 s per edge, with how
/// many were dropped since its last line.
struct EdgeVersionOneTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")
  static let device = Bench.address(7)

  /// Every client message of both profiles, with tokens that would pass, under `cookie`.
  static func versionOne(cookie: UInt64) throws -> [[UInt8]] {
    let channelToken = World.token(.channel(lobby, uid: 7), expiresAt: 0)
    let loginToken = World.token(.user(Bench.user("alice")), expiresAt: 0)
    let messages: [Message] = [
      .join(
        JoinRequest(
          uid: 7, appID: Fixture.appID, channel: lobby, token: channelToken, isRejoin: false)),
      .join(
        JoinRequest(
          uid: 7, appID: Fixture.appID, channel: lobby, token: channelToken, isRejoin: true)),
      .login(
        LoginRequest(
          appID: Fixture.appID, userID: Bench.user("alice"), token: loginToken, isRelogin: false)),
      .heartbeat(sequence: 1), .leave, .renewToken(channelToken),
      .loginHeartbeat(sequence: 1, eventsReceived: 0), .logout,
      .channelOperation(ChannelOperation(sequence: 1, kind: .join, channel: lobby)),
    ]
    return messages.map { Packet(cookie: cookie, message: $0).encoded }
  }

  @Test func aVersionOneDatagram_getsNothingBack_andChangesNothing() throws {
    var bench = Bench()
    var member = bench.device(.channel(Self.lobby, uid: 7))
    bench.connect(&member, Bench.channelRequest(uid: 7))
    let datagrams =
      try Self.versionOne(cookie: 0xC0FFEE) + Self.versionOne(cookie: member.sessionID)
    for datagram in datagrams {
      for address in [Self.device, member.address] {
        #expect(bench.send(datagram, from: address).isEmpty)
      }
    }
    #expect(bench.server.counters.versionOneDropped == UInt64(2 * datagrams.count))
    #expect(bench.server.members(of: Self.lobby) == [7])
    #expect(bench.server.loginSessionCount == 0)
    #expect(bench.server.table[member.sessionID]?.address == member.address)
    // And the member goes on, answered as before.
    #expect(bench.data(&member, DevicePayloads.heartbeat(2)).map(\.type) == [0x83])
  }

  @Test func randomTails_afterAVersionOneHeader_getNothing() {
    var server = EdgeServer(config: World.config(), crypto: SimCrypto(seed: 1))
    var random = SeededRandom(seed: 11)
    for _ in 0..<5000 {
      var bytes: [UInt8] = [0x54, 0x48, 0x01]
      bytes += (0..<Int(random.next() % 1300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      #expect(
        server.receive(
          bytes[...], from: Self.device, now: .ms(random.next() % 100_000), wallClock: 0
        )
        .isEmpty)
    }
    #expect(server.counters.versionOneDropped == 5000)
    #expect(server.counters.malformed == 0)
    #expect(server.sessionCount == 0 && server.loginSessionCount == 0)
  }

  /// One event at the first drop; none within 10 s of it, however many come; at 10 s one
  /// that counts every datagram dropped since the last (this one included).
  @Test func theDrops_areLoggedAtMostOncePer10s_countingThoseInBetween() throws {
    var config = World.config()
    config.recordsEvents = true
    var server = EdgeServer(config: config, crypto: SimCrypto(seed: 1))
    let beat = Packet(cookie: 5, message: .heartbeat(sequence: 1)).encoded
    func drop(at ms: UInt64) -> [EdgeEvent] {
      #expect(server.receive(beat[...], from: Self.device, now: .ms(ms), wallClock: 0).isEmpty)
      return server.takeEvents()
    }
    #expect(drop(at: 1_000) == [.versionOneDropped(count: 1)])
    for ms in stride(from: UInt64(1_100), to: 11_000, by: 100) {
      #expect(drop(at: ms) == [])
    }
    #expect(drop(at: 11_000) == [.versionOneDropped(count: 100)])
    #expect(drop(at: 20_999) == [])
    // A quiet spell: the next drop is logged at once, with the one left over.
    #expect(drop(at: 60_000) == [.versionOneDropped(count: 2)])
    #expect(server.counters.versionOneDropped == 103)
  }

  @Test func theLogLine_saysWhy_atWarning_withTheCount() throws {
    let captured = EdgeLogTests.Captured()
    // Logged at warning: an edge whose level is warning still says it.
    let logger = EdgeLogTests.logger(captured, level: .warning)
    logger.log(EdgeEvent.versionOneDropped(count: 42))
    logger.log(EdgeEvent.joined(channel: Self.lobby, uid: 1, resumed: false))  // info: not
    let lines = captured.all
    #expect(lines.count == 1)
    let parsed = try EdgeLogTests.parse(try #require(lines.first))
    #expect(parsed.level == "warning")
    #expect(parsed.message == "v1-dropped")
    #expect(
      lines.first?.hasSuffix(
        " dropped=42 why=\"protocol version 1 datagram dropped: devices must speak version 2\"")
        == true, "\(lines)")
    #expect(
      EdgeEvent.versionOneDropped(count: 42).description
        == "protocol version 1 datagram dropped: devices must speak version 2"
        + " (42 since the last line)")
  }

  /// A version 1 admin request (HMAC-SHA256 under the raw certificate, version byte 1) is
  /// malformed: no answer, no kick.
  @Test func aVersionOneAdminRequest_getsNothing() {
    var bench = Bench()
    var member = bench.device(.channel(Self.lobby, uid: 7))
    bench.connect(&member, Bench.channelRequest(uid: 7))
    var request = AdminKick(
      channel: Self.lobby, uid: 7, banSeconds: 0, unixTime: bench.wallClock, nonce: 1
    ).sealed(appID: Fixture.appID, certificate: World.certificate)
    request[2] = 1
    #expect(bench.send(request, from: Self.device).isEmpty)
    #expect(bench.server.counters.malformed == 1)
    #expect(bench.server.members(of: Self.lobby) == [7])
  }
}
