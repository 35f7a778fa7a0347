// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// Certificate rotation (docs/PROTOCOL.md §12.3): the edge loads the current certificate
/// and, optionally, the previous one (`--previous-app-certificate`); a version 2 token
/// minted under either joins and renews, one of neither is refused as any token that does
/// not open. Reset values stay the current certificate's.
struct EdgeCertificateRotationTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")
  static let old = Array("the certificate before the rotation, long enough".utf8)
  static let current = Array("the certificate after the rotation, long enough!!".utf8)

  static func bench(previous: [UInt8]? = Self.old) throws -> Bench {
    Bench(
      config: try EdgeConfig(
        appID: Fixture.appID, appCertificate: Self.current, previousCertificate: previous))
  }

  /// A device at 10.0.0.`host` with a channel token minted under `certificate`.
  static func device(
    under certificate: [UInt8], uid: UInt32, host: UInt8, expiresAt: UInt64 = 0
  ) throws -> SecureDevice {
    let minter = try TokenMinter(certificate: certificate)
    return SecureDevice(
      token: minter.mint(
        appID: Fixture.appID, grant: .channel(Self.lobby, uid: uid), expiresAt: expiresAt),
      address: Bench.address(host))
  }

  // MARK: - The configuration

  @Test func thePreviousCertificate_isKept_withItsKeys() throws {
    let config = try EdgeConfig(
      appID: Fixture.appID, appCertificate: Self.current, previousCertificate: Self.old)
    #expect(config.previousCertificate == Self.old)
    #expect(config.previousCertificateKeys == (try CertificateKeys(certificate: Self.old)))
    #expect(config.certificateKeys == (try CertificateKeys(certificate: Self.current)))
    let none = try EdgeConfig(appID: Fixture.appID, appCertificate: Self.current)
    #expect(none.previousCertificate == nil && none.previousCertificateKeys == nil)
  }

  @Test func anEmptyPreviousCertificate_isRefused() {
    #expect(throws: EdgeConfigError.emptyPreviousCertificate) {
      try EdgeConfig(appID: Fixture.appID, appCertificate: Self.current, previousCertificate: [])
    }
  }

  /// Under 32 bytes, either certificate gets a warning at start, never a refusal.
  @Test func shortCertificates_areListedForTheWarning_neverRefused() throws {
    let strong = [UInt8](repeating: 7, count: 32)
    let short = Array("typed".utf8)
    func listed(_ current: [UInt8], _ previous: [UInt8]?) throws -> [String] {
      try EdgeConfig(appID: Fixture.appID, appCertificate: current, previousCertificate: previous)
        .shortCertificates.map { "\($0.name) \($0.bytes)" }
    }
    #expect(try listed(strong, nil) == [])
    #expect(try listed(strong, strong) == [])
    #expect(try listed(short, nil) == ["app certificate 5"])
    #expect(try listed(strong, short) == ["previous app certificate 5"])
    #expect(
      try listed(short, Array(strong.prefix(31))) == [
        "app certificate 5", "previous app certificate 31",
      ])
  }

  // MARK: - Through the edge

  /// Tokens of the previous and of the current certificate both join; a token of neither
  /// gets REFUSE_CLEAR, no larger than its INIT.
  @Test func tokensOfEitherCertificate_join_andOfNeither_areRefused() throws {
    var bench = try Self.bench()
    var before = try Self.device(under: Self.old, uid: 1, host: 1)
    var after = try Self.device(under: Self.current, uid: 2, host: 2)
    #expect(bench.connect(&before, Bench.channelRequest(uid: 1)).first?.type == 0x81)
    #expect(bench.connect(&after, Bench.channelRequest(uid: 2)).first?.type == 0x81)
    #expect(bench.server.members(of: Self.lobby) == [1, 2])

    var stranger = try Self.device(under: Array("another app's".utf8), uid: 3, host: 3)
    let answers = bench.sendUnvalidated(
      stranger.initiate(Bench.channelRequest(uid: 3)), from: stranger.address)
    #expect(answers.map { $0.bytes.first } == [0x05])
    #expect(bench.server.members(of: Self.lobby) == [1, 2])
  }

  /// The control: without the previous certificate loaded, its tokens are refused.
  @Test func withoutThePreviousCertificate_itsTokensAreRefused() throws {
    var bench = try Self.bench(previous: nil)
    var before = try Self.device(under: Self.old, uid: 1, host: 1)
    let answers = bench.sendUnvalidated(
      before.initiate(Bench.channelRequest(uid: 1)), from: before.address)
    #expect(answers.map { $0.bytes.first } == [0x05])
    #expect(bench.server.members(of: Self.lobby).isEmpty)
  }

  /// A session joined under the current certificate renews with a token of the previous
  /// one, and the other way round: a rotation renews too (§12.10).
  @Test func aRenewal_takesATokenOfEitherCertificate() throws {
    var bench = try Self.bench()
    let wall = bench.wallClock
    var alice = try Self.device(under: Self.current, uid: 1, host: 1, expiresAt: wall + 100)
    #expect(bench.connect(&alice, Bench.channelRequest(uid: 1)).first?.type == 0x81)
    for (certificate, expiry) in [(Self.old, wall + 1000), (Self.current, wall + 2000)] {
      let minter = try TokenMinter(certificate: certificate)
      let newer = try TokenV2(
        text: Array(
          minter.mint(
            appID: Fixture.appID, grant: .channel(Self.lobby, uid: 1), expiresAt: expiry
          ).utf8)[...],
        crypto: SodiumCrypto())
      #expect(
        bench.data(&alice, DevicePayloads.renew(newer)).map(\.message) == [
          .tokenRenewed(
            TokenRenewal(refused: nil, tokenTimeLeftMs: UInt32((expiry - wall) * 1000)))
        ])
      #expect(bench.server.table[alice.sessionID]?.tokenExpiry == expiry)
    }
  }

  /// Reset values are the current certificate's, whichever opened the session's token:
  /// the edge after a restart cannot know which did, and a RESET has room for one value.
  @Test func theResetValue_isTheCurrentCertificates() throws {
    var bench = try Self.bench()
    var before = try Self.device(under: Self.old, uid: 1, host: 1)
    bench.connect(&before, Bench.channelRequest(uid: 1))
    let current = ResetValue.of(
      SessionID(before.sessionID), edgeID: bench.config.edgeID,
      keys: bench.config.certificateKeys, crypto: SodiumCrypto())
    #expect(before.resetValue == current)
    #expect(!before.resetValue.isEmpty)
  }
}
