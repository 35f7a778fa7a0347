// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// A session's reset value (docs/PROTOCOL.md §12.9): `PRF16(K_reset, edge id ‖ session id,
/// "tether2 reset")`. The ACCEPT gives it to the device; a RESET carries it when the edge no
/// longer holds the session. A restarted edge with the same certificate and edge id makes
/// the same value from the session id alone, with no state; another edge (another id) or
/// anyone without the certificate cannot.
public enum ResetValue {
  /// The value's size.
  public static let bytes = 16

  /// The reset value of `id` at the edge `edgeID` under `keys`' `K_reset`.
  public static func of<Crypto: SessionCrypto>(
    _ id: SessionID, edgeID: EdgeID, keys: CertificateKeys, crypto: Crypto
  ) -> [UInt8] {
    crypto.derive(
      key: keys.reset, input: (edgeID.bytes + id.bytes)[...], label: "tether2 reset", length: bytes)
  }
}
