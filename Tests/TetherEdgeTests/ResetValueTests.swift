// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

@testable import TetherEdge

/// Reset values (docs/PROTOCOL.md §12.9): `PRF16(K_reset, edge id ‖ session id, "tether2
/// reset")`, the same for a restarted edge, different for another edge or certificate.
struct ResetValueTests {
  static let id = SessionID(epoch: 0x0A0B_0C0D, serial: 7)

  /// Computed with Python's hashlib: `blake2b(b"edge-1:7000" + id, digest_size=16,
  /// key=K_reset("secret"), salt=bytes(16), person=b"tether2 reset" + bytes(3))`.
  @Test func theValue_matchesHashlib() throws {
    let keys = try CertificateKeys(certificate: Array("secret".utf8))
    let edge = try #require(EdgeID("edge-1:7000"))
    let value = ResetValue.of(Self.id, edgeID: edge, keys: keys, crypto: SodiumCrypto())
    #expect(CertificateKeyTests.hex(value) == "095a2f91ca488e7fed37d20bfbd67226")
  }

  @Test func anotherEdge_anotherCertificate_orAnotherSession_makesAnotherValue() throws {
    let keys = try CertificateKeys(certificate: Array("secret".utf8))
    let edge = try #require(EdgeID("edge-1:7000"))
    let value = ResetValue.of(Self.id, edgeID: edge, keys: keys, crypto: SodiumCrypto())
    #expect(value.count == 16)
    // A restarted edge (same certificate, same id) makes the same one, with no state.
    #expect(ResetValue.of(Self.id, edgeID: edge, keys: keys, crypto: SodiumCrypto()) == value)
    let otherEdge = try #require(EdgeID("edge-2:7000"))
    #expect(ResetValue.of(Self.id, edgeID: otherEdge, keys: keys, crypto: SodiumCrypto()) != value)
    let otherKeys = try CertificateKeys(certificate: Array("secreu".utf8))
    #expect(ResetValue.of(Self.id, edgeID: edge, keys: otherKeys, crypto: SodiumCrypto()) != value)
    let next = SessionID(epoch: Self.id.epoch, serial: 8)
    #expect(ResetValue.of(next, edgeID: edge, keys: keys, crypto: SodiumCrypto()) != value)
  }
}
