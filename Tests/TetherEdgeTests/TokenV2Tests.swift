// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

@testable import TetherEdge

/// Version 2 tokens on the edge (docs/PROTOCOL.md §12.4): ``TokenMinter`` makes the bytes PyNaCl made
/// from the same seeded draws (contrib/python/tether_token.py, through
/// scripts/test/v2-vectors.py), and ``TokenOpener`` opens what a device sends of them and
/// nothing else.
struct TokenV2Tests {
  // MARK: - Minting

  @Test(arguments: TokenV2Vector.all)
  func minter_makesTheVectorsBytes_fromTheSameSeededDraws(_ vector: TokenV2Vector) throws {
    let crypto = SeededCrypto(seed: vector.seed)
    let minter = TokenMinter(crypto: crypto, keys: try vector.keys())
    let text = minter.mint(
      appID: try vector.app(), grant: try vector.grant(), expiresAt: vector.expiry)
    #expect(text == vector.text)
    // The device secret (32), then the nonce (24): nothing else drawn.
    #expect(crypto.drawn == 56)
  }

  @Test(arguments: TokenV2Vector.all)
  func opener_opensTheVectors_withTheirGrantAndSecret(_ vector: TokenV2Vector) throws {
    let keys = try vector.keys()
    let binary = try Self.binary(vector.text)
    let opened = try TokenOpener(crypto: SodiumCrypto(), current: keys).open(Self.wire(binary)[...])
    #expect(opened.appID == (try vector.app()))
    #expect(opened.grant == (try vector.grant()))
    #expect(opened.expiry == vector.expiry && opened.keyID == keys.keyID)
    #expect(opened.deviceSecret == Array(binary[11..<43]))
    #expect(opened.header == Array(binary[0..<11]) && opened.certificate == .current)
  }

  @Test func aMintedText_is337PrintableCharacters_andEveryTokenIsNew() throws {
    let minter = try TokenMinter(certificate: Array("secret".utf8))
    let grant = TokenGrant.channel(try ChannelName(validating: "room".utf8), uid: 7)
    let one = minter.mint(appID: try AppID(validating: "app".utf8), grant: grant, expiresAt: 0)
    let two = minter.mint(appID: try AppID(validating: "app".utf8), grant: grant, expiresAt: 0)
    #expect(one.utf8.count == 337 && one.hasPrefix("2.") && one != two)
    #expect(one.utf8.allSatisfy { (0x21...0x7E).contains($0) })
    let opener = TokenOpener(
      crypto: SodiumCrypto(), current: try CertificateKeys(certificate: Array("secret".utf8)))
    #expect(try opener.open(Self.wire(Self.binary(one))[...]).grant == grant)
  }

  @Test func expiry_isSecondsFromNow_zeroNever_andSaturates() {
    #expect(TokenExpiry.after(3600, now: 1_000) == 4_600)
    #expect(TokenExpiry.after(0, now: 1_000) == 0)
    #expect(TokenExpiry.after(.max, now: 2) == .max)
  }

  @Test func isExpired_asVersion1JudgesIt() throws {
    let opened = try Self.open(TokenV2Vector.all[0])
    #expect(!opened.isExpired(wallClock: 1_899_999_999))
    #expect(opened.isExpired(wallClock: 1_900_000_000))
    let never = try Self.open(TokenV2Vector.all[1])
    #expect(!never.isExpired(wallClock: .max))
  }

  // MARK: - Refusals

  /// Every bit flipped at every offset of `W` is refused: the version byte as a version,
  /// the key id as unknown (only one certificate is loaded), anything else as unopened.
  @Test(arguments: TokenV2Vector.all)
  func everyByteFlipped_isRefused(_ vector: TokenV2Vector) throws {
    let opener = TokenOpener(crypto: SodiumCrypto(), current: try vector.keys())
    let wire = try Self.wire(Self.binary(vector.text))
    for offset in wire.indices {
      for bit in [UInt8(0x01), 0x80] {
        var flipped = wire
        flipped[offset] ^= bit
        let expected: TokenRefusal =
          switch offset {
          case 0: .version
          case 1, 2: .unknownKey
          default: .unopened
          }
        #expect(throws: expected) { try opener.open(flipped[...]) }
      }
    }
  }

  @Test func aWrongSize_isMalformed() throws {
    let opener = TokenOpener(crypto: SodiumCrypto(), current: try TokenV2Vector.all[0].keys())
    let wire = try Self.wire(Self.binary(TokenV2Vector.all[0].text))
    #expect(throws: TokenRefusal.malformed) { try opener.open(wire.dropLast()) }
    #expect(throws: TokenRefusal.malformed) { try opener.open((wire + [0])[...]) }
    #expect(throws: TokenRefusal.malformed) { try opener.open([]) }
  }

  /// Vector 0 is of "secret"; an edge with another certificate does not know its key id.
  @Test func aTokenOfAnotherCertificate_isRefused() throws {
    let wire = try Self.wire(Self.binary(TokenV2Vector.all[0].text))
    let other = try CertificateKeys(certificate: Array("secreu".utf8))
    #expect(throws: TokenRefusal.unknownKey) {
      try TokenOpener(crypto: SodiumCrypto(), current: other).open(wire[...])
    }
  }

  /// "rotation-71" and "rotation-98" share key id 0xF09C (found with tether_token.key_id):
  /// a token of one does not open under the other, though its key id names it.
  @Test func aTokenOfAnotherCertificateWithTheSameKeyID_doesNotOpen() throws {
    let (one, two) = try Self.collidingKeys()
    #expect(one.keyID == 0xF09C && two.keyID == 0xF09C)
    let wire = try Self.mintWire(under: two)
    #expect(throws: TokenRefusal.unopened) {
      try TokenOpener(crypto: SodiumCrypto(), current: one).open(wire[...])
    }
  }

  // MARK: - Rotation

  @Test func rotation_opensTokensOfTheCurrentAndThePreviousCertificate() throws {
    let old = try CertificateKeys(certificate: Array("secret".utf8))
    let new = try CertificateKeys(certificate: Array(repeating: 0x6B, count: 32))
    let rotating = TokenOpener(crypto: SodiumCrypto(), current: new, previous: old)
    #expect(try rotating.open(Self.mintWire(under: old)[...]).certificate == .previous)
    #expect(try rotating.open(Self.mintWire(under: new)[...]).certificate == .current)
    // Once the previous one is dropped, its tokens are refused.
    let rotated = TokenOpener(crypto: SodiumCrypto(), current: new)
    #expect(throws: TokenRefusal.unknownKey) { try rotated.open(Self.mintWire(under: old)[...]) }
  }

  /// On equal key ids both certificates are tried, the current first.
  @Test func rotation_withEqualKeyIDs_triesBoth() throws {
    let (one, two) = try Self.collidingKeys()
    let opener = TokenOpener(crypto: SodiumCrypto(), current: one, previous: two)
    #expect(try opener.open(Self.mintWire(under: two)[...]).certificate == .previous)
    #expect(try opener.open(Self.mintWire(under: one)[...]).certificate == .current)
  }

  // MARK: - Private fields read strictly

  /// A sealed part that opens but breaks §12.4's layout (only a faulty minter makes one) is
  /// refused: each change below is made to a valid `P`, sealed again under `K_token`.
  @Test(arguments: [
    (32, 3, "grant kind 3"), (33, 0, "empty app id"), (33, 65, "app id past 64"),
    (40, 1, "app id filling not zero"), (34, 0x20, "space in the app id"),
    (98, 64, "channel name past 63"), (110, 1, "name filling not zero"),
    (166, 1, "a login grant with uid 1"), (167, 1, "reserved byte not 0"),
  ])
  func aBadPrivateField_isRefused(offset: Int, value: UInt8, what: String) throws {
    let keys = try CertificateKeys(certificate: Array("secret".utf8))
    let crypto = SodiumCrypto()
    let app = try AppID(validating: "app".utf8)
    var grant = TokenGrant.channel(try ChannelName(validating: "room".utf8), uid: 7)
    if offset == 166 { grant = .user(try UserID(validating: "alice".utf8)) }
    var fields = TokenMinter<SodiumCrypto>.privateFields(
      secret: [UInt8](repeating: 9, count: 32), appID: app, grant: grant)
    #expect(throws: Never.self, "valid before the change") {
      try TokenOpener<SodiumCrypto>.grant(in: fields)
    }
    fields[offset] = value
    let header: [UInt8] =
      [2] + [UInt8(keys.keyID >> 8), UInt8(keys.keyID & 0xFF)] + [UInt8](repeating: 0, count: 8)
    let nonce = [UInt8](repeating: 5, count: 24)
    let sealed = crypto.xaeadSeal(
      key: keys.token, nonce: nonce, ad: header[...], plaintext: fields[...])
    #expect(throws: TokenRefusal.invalidFields, "\(what)") {
      try TokenOpener(crypto: crypto, current: keys).open((header + nonce + sealed)[...])
    }
  }

  // MARK: - Helpers

  /// The binary token `T` of a text.
  static func binary(_ text: String) throws -> [UInt8] {
    let bytes = Array(text.utf8)
    #expect(bytes.starts(with: Array("2.".utf8)))
    return try #require(SodiumCrypto().base64URLDecode(bytes.dropFirst(2)))
  }

  /// `W` of a binary token.
  static func wire(_ binary: [UInt8]) throws -> [UInt8] {
    try #require(TokenV2Layout.wire(of: binary))
  }

  static func open(_ vector: TokenV2Vector) throws -> OpenedToken {
    try TokenOpener(crypto: SodiumCrypto(), current: try vector.keys())
      .open(wire(binary(vector.text))[...])
  }

  static func mintWire(under keys: CertificateKeys) throws -> [UInt8] {
    let minter = TokenMinter(crypto: SodiumCrypto(), keys: keys)
    let grant = TokenGrant.user(try UserID(validating: "alice".utf8))
    return try wire(
      minter.mintBinary(appID: try AppID(validating: "app".utf8), grant: grant, expiresAt: 0))
  }

  static func collidingKeys() throws -> (CertificateKeys, CertificateKeys) {
    (
      try CertificateKeys(certificate: Array("rotation-71".utf8)),
      try CertificateKeys(certificate: Array("rotation-98".utf8))
    )
  }
}

extension TokenV2Vector {
  func keys() throws -> CertificateKeys {
    try CertificateKeys(certificate: CertificateKeyTests.bytes(certificate))
  }

  func app() throws -> AppID { try AppID(validating: appID.utf8) }

  func grant() throws -> TokenGrant {
    kind == 1
      ? .channel(try ChannelName(validating: name.utf8), uid: uid)
      : .user(try UserID(validating: name.utf8))
  }
}

extension TokenV2Vector: CustomTestStringConvertible {
  var testDescription: String { "kind \(kind), seed \(seed), \(name.prefix(8))" }
}
