// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The session id issuer on a random source that gives fewer bytes than asked (docs/PROTOCOL.md
/// §12.8): it looped forever drawing an epoch; now it draws a bounded number of times and
/// issues nothing, and the edge answers that INIT with nothing, counted.
struct EdgeRandomShortfallTests {
  /// Every draw one byte short: the issuer gives up after a bounded number of draws (it
  /// returned at all), issues nothing, and tries again at the next id.
  @Test func aShortRandomSource_endsInNoEpoch_notALoop() {
    let crypto = SeededCrypto(seed: 1)
    crypto.stream.shortDraws = 1_000
    var issuer = SessionIDIssuer(crypto: crypto, ticketLifetime: .seconds(3))
    #expect(issuer.epoch == 0)
    #expect(crypto.stream.shortDraws == 1_000 - SessionIDIssuer<SeededCrypto>.epochDraws)
    #expect(issuer.issue(now: .zero) == nil)
    #expect(issuer.lastSerial == 0)
    // Once the source gives whole draws again, the next id has an epoch.
    crypto.stream.shortDraws = 0
    let id = issuer.issue(now: .zero)
    #expect(id != nil && id?.epoch != 0 && id?.serial == 1)
    #expect(issuer.epoch == id?.epoch)
  }

  /// A short draw among good ones is drawn again, within the bound.
  @Test func aShortDraw_isDrawnAgain() {
    let crypto = SeededCrypto(seed: 1, scripted: [0, 0, 0, 9])
    crypto.stream.shortDraws = SessionIDIssuer<SeededCrypto>.epochDraws - 1
    #expect(SessionIDIssuer(crypto: crypto, ticketLifetime: .seconds(3)).epoch == 9)
  }

  /// At the end of an epoch's serials, a source that gives nothing: no id (never the old
  /// epoch again, never a loop); the next call, with a working source, starts a new epoch.
  @Test func theLastSerial_withAShortSource_issuesNothing_thenANewEpoch() throws {
    let crypto = SeededCrypto(seed: 1, scripted: [0, 0, 0, 5])
    var issuer = SessionIDIssuer(
      crypto: crypto, ticketLifetime: .seconds(3),
      lastSerial: SessionIDIssuer<SeededCrypto>.finalSerial)
    crypto.stream.shortDraws = 100
    #expect(issuer.issue(now: .zero) == nil)
    #expect(issuer.epoch == 5 && issuer.lastSerial == SessionIDIssuer<SeededCrypto>.finalSerial)
    crypto.stream.shortDraws = 0
    let id = try issuer.issued(now: .zero)
    #expect(id.epoch != 5 && id.epoch != 0 && id.serial == 1)
  }

  /// The edge on such a source: an INIT gets nothing (no RESPONSE can be made), counted,
  /// and the edge goes on; a device's next INIT, once the source works, is answered.
  @Test func anEdgeOnAShortSource_answersNothing_andCountsIt() throws {
    let crypto = SeededCrypto(seed: 1)
    crypto.stream.shortDraws = 1_000_000
    let config = World.config()
    var server = EdgeServer(config: config, crypto: crypto)
    let minter = TokenMinter(crypto: SodiumCrypto(), keys: config.certificateKeys)
    let lobby = SecureBench.channel("lobby")
    var device = SecureDevice(
      token: minter.mint(appID: Fixture.appID, grant: .channel(lobby, uid: 1), expiresAt: 0),
      address: SecureBench.address(1))
    let now = Instant(nanoseconds: 1_000_000_000_000)
    let initiation = device.initiate(SecureBench.channelRequest(uid: 1))
    let wall = World.wallBase + 1_000
    #expect(
      server.receive(initiation[...], from: device.address, now: now, wallClock: wall).isEmpty)
    #expect(server.counters.randomShortfalls == 1)
    #expect(server.counters.handshakesAnswered == 0)
    crypto.stream.shortDraws = 0
    let answers = server.receive(
      device.initiate(SecureBench.channelRequest(uid: 1))[...], from: device.address, now: now,
      wallClock: wall)
    #expect(answers.map(\.bytes.count) == [269])
    #expect(server.counters.handshakesAnswered == 1)
  }
}
