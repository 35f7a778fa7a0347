// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

@testable import TetherEdge

/// The device's parse of version 2 tokens (docs/PROTOCOL.md §12.4) through libsodium's
/// base64url, against the tokens PyNaCl minted from a seeded stream
/// (scripts/test/v2-vectors.py): the secret is the stream's first 32 bytes, and `W` is
/// the token without it. The device cannot open the sealed part; these tests can, with the
/// certificate's `K_token`, to show that `W` is what the edge needs.
struct TokenV2ParseTests {
  let crypto = SodiumCrypto()

  init() { #expect(SodiumCrypto.start()) }

  static func text(_ string: String) -> ArraySlice<UInt8> { Array(string.utf8)[...] }

  /// The 251 binary bytes of a token text, decoded without TokenV2.
  func binary(_ text: String) throws -> [UInt8] {
    try #require(crypto.base64URLDecode(Self.text(text).dropFirst(2)))
  }

  func encode(_ binary: [UInt8]) -> String {
    "2." + String(decoding: crypto.base64URLEncode(binary[...]), as: UTF8.self)
  }

  @Test(arguments: TokenV2Vector.all)
  func aMintedToken_givesItsSecretHeaderAndW(_ vector: TokenV2Vector) throws {
    let token = try TokenV2(text: Self.text(vector.text), crypto: crypto)
    #expect(token.deviceSecret == SeededCrypto.prefix(32, seed: vector.seed))
    let keys = try CertificateKeys(certificate: CertificateKeyTests.bytes(vector.certificate))
    #expect(token.keyID == keys.keyID)
    #expect(token.expiry == vector.expiry)
    let binary = try binary(vector.text)
    #expect(token.sent == Array(binary[0..<11] + binary[43..<251]))
    #expect(token.sent.count == 219 && token.tokenVersion == TokenV2.version)

    // W's sealed part opens under K_token with W's header as associated data, to P, whose
    // first 32 bytes are the secret: W is everything the edge needs.
    let opened = try #require(
      crypto.xaeadOpen(
        key: keys.token, nonce: Array(token.sent[11..<35]), ad: token.sent[0..<11],
        sealed: token.sent[35...]))
    #expect(Array(opened[0..<32]) == token.deviceSecret)
    #expect(opened[32] == vector.kind)
  }

  /// Every bit of every byte of the text, flipped: refused, or a token whose secret or `W`
  /// differs (base64url without padding has one text per byte string, and libsodium
  /// refuses stray bits in the last character). Never a trap, never the same token.
  @Test func everyBitFlip_ofTheText_isRefusedOrChangesWhatIsRead() throws {
    let vector = TokenV2Vector.all[0]
    let original = try TokenV2(text: Self.text(vector.text), crypto: crypto)
    var text = Array(vector.text.utf8)
    var refused = 0
    for index in text.indices {
      for bit in 0..<8 {
        text[index] ^= 1 << UInt8(bit)
        defer { text[index] ^= 1 << UInt8(bit) }
        do {
          let token = try TokenV2(text: text[...], crypto: crypto)
          #expect(
            token.deviceSecret != original.deviceSecret || token.sent != original.sent,
            "byte \(index) bit \(bit)")
        } catch {
          refused += 1
        }
      }
    }
    #expect(refused > 0)
  }

  /// libsodium 1.0.18's base64 decoder reads each character as a signed char, so it takes
  /// 0xDF (and 0xAD) for '_': a second text of the same token, which TokenV2 refuses
  /// before decoding. The seam alone accepts it, which is why the check is TokenV2's.
  @Test func aCharacterWithBit7Set_isRefused_whereLibsodiumTakesItForUnderscore() throws {
    let vector = TokenV2Vector.all[0]
    var text = Array(vector.text.utf8)
    let underscore = try #require(text.firstIndex(of: UInt8(ascii: "_")))
    text[underscore] = 0xDF
    let decoded = crypto.base64URLDecode(text[2...])
    let genuine = try binary(vector.text)
    #expect(decoded == nil || decoded == genuine)
    #expect(throws: TokenV2.Refusal.badBase64) { try TokenV2(text: text[...], crypto: crypto) }
  }

  /// Every byte of the decoded `W` (the header and the sealed part), flipped: the device
  /// reads the flipped value where it reads one (version: refused; key id and expiry:
  /// changed), and carries the rest in `W` to the edge, which refuses it; the secret stays.
  @Test func everyByteFlip_ofW_isReadAsFlippedOrRefused() throws {
    let vector = TokenV2Vector.all[1]
    let original = try TokenV2(text: Self.text(vector.text), crypto: crypto)
    let binary = try binary(vector.text)
    let wOffsets = Array(0..<11) + Array(43..<251)
    for (wIndex, offset) in wOffsets.enumerated() {
      var flipped = binary
      flipped[offset] ^= 0xFF
      let text = encode(flipped)
      if offset == 0 {
        #expect(throws: TokenV2.Refusal.wrongVersion) {
          try TokenV2(text: Self.text(text), crypto: crypto)
        }
        continue
      }
      let token = try TokenV2(text: Self.text(text), crypto: crypto)
      var expected = original.sent
      expected[wIndex] ^= 0xFF
      #expect(token.sent == expected)
      #expect(token.deviceSecret == original.deviceSecret)
      #expect(offset >= 3 || token.keyID == original.keyID ^ (offset == 1 ? 0xFF00 : 0x00FF))
      #expect(offset < 3 || offset >= 11 || token.expiry != original.expiry)
    }
  }

  /// A text that is not a version 2 token is a typed refusal, whatever it is.
  @Test func otherTexts_areRefused_withTheirReason() throws {
    let valid = TokenV2Vector.all[0].text
    let binary = try binary(valid)
    var version3 = binary
    version3[0] = 3
    let cases: [(String, TokenV2.Refusal)] = [
      ("", .notVersion2),
      ("2", .notVersion2),
      ("3." + valid.dropFirst(2), .notVersion2),
      ("006eJzTdGQ=", .notVersion2),  // version 1's shape: any other printable text
      ("2.", .wrongLength),
      (String(valid.dropLast()), .wrongLength),
      (valid + "A", .wrongLength),
      ("2." + String(valid.dropFirst(3)) + "=", .badBase64),
      ("2." + String(repeating: "+", count: 335), .badBase64),
      ("2." + String(valid.dropFirst(2).dropLast()) + "!", .badBase64),
      (encode(version3), .wrongVersion),
    ]
    for (text, refusal) in cases {
      #expect(throws: refusal, "\(text.prefix(12))") {
        try TokenV2(text: Self.text(text), crypto: crypto)
      }
    }
  }
}

extension TokenV2ParseTests {
  /// `token` with its device secret replaced (W unchanged): what a forger who copied W but
  /// not the secret would hold.
  static func withSecret(_ secret: [UInt8], of token: TokenV2, crypto: SodiumCrypto) throws
    -> TokenV2
  {
    var binary = Array(token.sent[0..<11]) + secret + Array(token.sent[11...])
    let text = Array("2.".utf8) + crypto.base64URLEncode(binary[...])
    binary = []
    return try TokenV2(text: text[...], crypto: crypto)
  }
}
