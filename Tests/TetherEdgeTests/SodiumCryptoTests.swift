// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

/// The seam's libsodium side (`SodiumCrypto`): published vectors where there are some,
/// round trips elsewhere, and every size check answering nil or empty rather than
/// reaching libsodium.
struct SodiumCryptoTests {
  let crypto = SodiumCrypto()

  init() { #expect(SodiumCrypto.start()) }

  static func bytes(_ hex: String) -> [UInt8] { CertificateKeyTests.bytes(hex) }

  /// RFC 7748 §6.1: Alice's and Bob's keys, and their shared secret from both sides.
  @Test func rfc7748_x25519() throws {
    let alice = Self.bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    let bob = Self.bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    let alicePublic = try #require(crypto.x25519PublicKey(secret: alice))
    let bobPublic = try #require(crypto.x25519PublicKey(secret: bob))
    #expect(
      alicePublic == Self.bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
    #expect(
      bobPublic == Self.bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
    let shared = Self.bytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
    #expect(crypto.x25519(secret: alice, publicKey: bobPublic[...]) == shared)
    #expect(crypto.x25519(secret: bob, publicKey: alicePublic[...]) == shared)
  }

  /// A low-order point gives an all-zero secret, which libsodium refuses: nil, not zeros.
  @Test func x25519_refusesALowOrderPoint() {
    let secret = [UInt8](repeating: 7, count: 32)
    #expect(crypto.x25519(secret: secret, publicKey: [UInt8](repeating: 0, count: 32)[...]) == nil)
    #expect(crypto.x25519(secret: secret, publicKey: [UInt8](repeating: 9, count: 31)[...]) == nil)
    #expect(crypto.x25519PublicKey(secret: [1, 2, 3]) == nil)
  }

  /// Both AEADs open what they seal, with an empty plaintext too, and refuse a flipped bit
  /// anywhere, other associated data, and wrong sizes.
  @Test(arguments: [false, true]) func aeads_roundTripAndRefuse(extended: Bool) throws {
    let key = [UInt8](repeating: 0x42, count: 32)
    let nonce = [UInt8](repeating: 0x24, count: extended ? 24 : 12)
    let seal = { (text: [UInt8], ad: [UInt8]) -> [UInt8] in
      extended
        ? crypto.xaeadSeal(key: key, nonce: nonce, ad: ad[...], plaintext: text[...])
        : crypto.aeadSeal(key: key, nonce: nonce, ad: ad[...], plaintext: text[...])
    }
    let open = { (sealed: [UInt8], ad: [UInt8]) -> [UInt8]? in
      extended
        ? crypto.xaeadOpen(key: key, nonce: nonce, ad: ad[...], sealed: sealed[...])
        : crypto.aeadOpen(key: key, nonce: nonce, ad: ad[...], sealed: sealed[...])
    }
    for text in [[UInt8](), Array("tether".utf8)] {
      let sealed = seal(text, [1, 2])
      #expect(sealed.count == text.count + 16)
      #expect(open(sealed, [1, 2]) == text)
      #expect(open(sealed, [1, 3]) == nil)
      for bit in 0..<(sealed.count * 8) {
        var flipped = sealed
        flipped[bit / 8] ^= 1 << UInt8(bit % 8)
        #expect(open(flipped, [1, 2]) == nil)
      }
    }
    let shortNonce = [UInt8](repeating: 0, count: 11)
    #expect(crypto.aeadSeal(key: key, nonce: shortNonce, ad: [], plaintext: [1]).isEmpty)
    #expect(
      crypto.xaeadOpen(
        key: [1], nonce: nonce, ad: [], sealed: [UInt8](repeating: 0, count: 16)[...]) == nil)
    #expect(
      crypto.aeadOpen(
        key: key, nonce: [UInt8](repeating: 0, count: 12), ad: [], sealed: [1, 2][...]) == nil)
  }

  /// Base64url without padding both ways; padding, the standard alphabet's characters,
  /// trailing bytes and impossible lengths are refused.
  @Test func base64URL() {
    let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10]
    let text = crypto.base64URLEncode(bytes[...])
    #expect(String(decoding: text, as: UTF8.self) == "-_-_ABA")
    #expect(crypto.base64URLDecode(text[...]) == bytes)
    #expect(crypto.base64URLDecode([][...]) == [])
    for bad in ["-_-_ABA=", "+/+/ABA", "-_-_ABA ", "-_-_A", "-_-_AB!"] {
      #expect(crypto.base64URLDecode(Array(bad.utf8)[...]) == nil, "\(bad)")
    }
    // Bytes past ASCII that libsodium 1.0.18 would read as '_': refused, so one byte
    // string has one text.
    for byte: UInt8 in [0xDF, 0xAD, 0x80, 0xFF] {
      #expect(crypto.base64URLDecode([0x2D, byte, 0x2D, 0x5F, 0x41, 0x42, 0x41][...]) == nil)
    }
  }

  /// BLAKE2b with salt and personalization, against Python's hashlib (the certificate
  /// vectors cover the keyed case): unkeyed, 32 bytes of "abc".
  @Test func blake2b_saltPersonal() {
    let out = crypto.blake2b(
      length: 32, input: Array("abc".utf8)[...], key: [], salt: [UInt8](repeating: 0, count: 16),
      personal: Array("tether2 hash".utf8) + [0, 0, 0, 0])
    #expect(out == Self.bytes(Self.abcHash))
    #expect(crypto.blake2b(length: 8, input: [], key: [], salt: [], personal: []).isEmpty)
  }

  /// hashlib.blake2b(b"abc", digest_size=32, salt=bytes(16), person=b"tether2 hash"+bytes(4)).
  static let abcHash = "399ffe10908e72645e84fbfdbbb7bccc0492ef346fed28808b30d164100319bb"

  @Test func constantTimeEqualAndWipe() {
    #expect(crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
    #expect(!crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
    #expect(!crypto.constantTimeEqual([1, 2], [1, 2, 3]))
    #expect(crypto.constantTimeEqual([], []))
    var secret: [UInt8] = [9, 9, 9]
    crypto.wipe(&secret)
    #expect(secret == [0, 0, 0])
    #expect(crypto.randomBytes(count: 32) != crypto.randomBytes(count: 32))
    #expect(crypto.randomBytes(count: 0).isEmpty)
  }
}
