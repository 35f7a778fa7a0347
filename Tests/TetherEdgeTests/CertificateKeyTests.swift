// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherEdge

/// Protocol version 2's keys of a certificate (docs/PROTOCOL.md §12.3), made with
/// libsodium, against vectors Python's hashlib computed alone (scripts/test/v2-vectors.py).
struct CertificateKeyTests {
  @Test(arguments: CertificateKeyVector.all)
  func keys_matchTheIndependentVectors(_ vector: CertificateKeyVector) throws {
    let keys = try CertificateKeys(certificate: Self.bytes(vector.certificate))
    #expect(Self.hex(keys.master) == vector.master)
    #expect(Self.hex(keys.token) == vector.token)
    #expect(Self.hex(keys.reset) == vector.reset)
    #expect(Self.hex(keys.admin) == vector.admin)
    #expect(keys.keyID == vector.keyID)
  }

  @Test func everyKey_differs_andOneByteOfCertificateChangesThemAll() throws {
    let a = try CertificateKeys(certificate: Array("secret".utf8))
    let b = try CertificateKeys(certificate: Array("secreu".utf8))
    #expect(Set([a.master, a.token, a.reset, a.admin]).count == 4)
    #expect(a.master != b.master && a.token != b.token && a.reset != b.reset)
    #expect(a.admin != b.admin)
  }

  @Test func anEmptyCertificate_isRefused() {
    #expect(throws: CertificateKeyError.empty) { try CertificateKeys(certificate: []) }
  }

  @Test func strength_isTheLength_andAGeneratedOneIsStrongAndFresh() {
    #expect(!CertificateKeys.isStrong(Array("app-certificate".utf8)))
    #expect(CertificateKeys.isStrong([UInt8](repeating: 1, count: 32)))
    let one = CertificateKeys.generate()
    let two = CertificateKeys.generate()
    #expect(one.count == 32 && CertificateKeys.isStrong(one) && one != two)
  }

  static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
  }

  static func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count - 1, by: 2).map { i in
      UInt8(Self.nibble(digits[i]) << 4 | Self.nibble(digits[i + 1]))
    }
  }

  private static func nibble(_ c: UInt8) -> UInt8 {
    c >= UInt8(ascii: "a") ? c - UInt8(ascii: "a") + 10 : c - UInt8(ascii: "0")
  }
}

extension CertificateKeyVector: CustomTestStringConvertible {
  var testDescription: String {
    "certificate \(certificate.prefix(16))… (\(certificate.count / 2) bytes)"
  }
}
