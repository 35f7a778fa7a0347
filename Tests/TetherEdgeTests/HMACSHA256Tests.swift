import Crypto
import Testing

@testable import TetherEdge

/// The edge's own HMAC-SHA256 (it links no crypto package): RFC 4231's vectors, FIPS
/// 180-4's SHA-256 examples, and agreement with swift-crypto on every length around the
/// block boundaries.
struct HMACSHA256Tests {
  static func bytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
      let next = hex.index(index, offsetBy: 2)
      out.append(UInt8(hex[index..<next], radix: 16) ?? 0)
      index = next
    }
    return out
  }

  static func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  @Test func sha256_matchesTheStandardsExamples() {
    #expect(
      Self.hex(SHA256Hasher.hash([UInt8]()))
        == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(
      Self.hex(SHA256Hasher.hash(Array("abc".utf8)))
        == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(
      Self.hex(
        SHA256Hasher.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
        == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
  }

  @Test(arguments: [
    // RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (5 truncates the output).
    (
      String(repeating: "0b", count: 20), Array("Hi There".utf8),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    ),
    (
      "4a656665", Array("what do ya want for nothing?".utf8),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    ),
    (
      String(repeating: "aa", count: 20), [UInt8](repeating: 0xdd, count: 50),
      "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
    ),
    (
      "0102030405060708090a0b0c0d0e0f10111213141516171819",
      [UInt8](repeating: 0xcd, count: 50),
      "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
    ),
    (
      String(repeating: "aa", count: 131),
      Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    ),
    (
      String(repeating: "aa", count: 131),
      Array(
        ("This is a test using a larger than block-size key and a larger than block-size data."
          + " The key needs to be hashed before being used by the HMAC algorithm.").utf8),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
    ),
  ])
  func hmac_matchesRFC4231(key: String, message: [UInt8], expected: String) {
    #expect(Self.hex(HMACSHA256.mac(key: Self.bytes(key), message: message)) == expected)
  }

  @Test func hmac_agreesWithSwiftCrypto_acrossTheBlockBoundaries() {
    var seed: UInt64 = 0x5eed
    func next() -> UInt8 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return UInt8(truncatingIfNeeded: seed >> 56)
    }
    for keyLength in [1, 16, 32, 63, 64, 65, 128, 200] {
      for messageLength in 0...200 {
        let key = (0..<keyLength).map { _ in next() }
        let message = (0..<messageLength).map { _ in next() }
        let reference = Array(
          Crypto.HMAC<Crypto.SHA256>.authenticationCode(
            for: message, using: SymmetricKey(data: key)))
        #expect(HMACSHA256.mac(key: key, message: message) == reference)
        #expect(HMACSHA256.mac(key: key, message: message[...]) == reference)
      }
    }
  }
}
