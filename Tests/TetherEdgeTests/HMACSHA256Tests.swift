// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherEdge

/// The edge's HMAC-SHA256 (libsodium's, behind `HMACSHA256.mac`): RFC 4231's vectors, and
/// the same MAC whatever collection holds the message.
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

  @Test func hmac_isTheSame_forAnArrayASliceAndACollectionWithNoContiguousStorage() {
    let key = Self.bytes(String(repeating: "0b", count: 20))
    let message = Array("Hi There".utf8)
    let expected = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    let framed = [0xff] + message + [0xff]
    #expect(Self.hex(HMACSHA256.mac(key: key, message: framed.dropFirst().dropLast())) == expected)
    #expect(Self.hex(HMACSHA256.mac(key: key, message: message.lazy.map { $0 })) == expected)
    #expect(Self.hex(HMACSHA256.mac(key: key, message: [UInt8]())) != expected)
  }
}
