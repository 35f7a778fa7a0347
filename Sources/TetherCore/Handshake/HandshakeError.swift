// SPDX-License-Identifier: Apache-2.0
/// Why a handshake datagram (docs/PROTOCOL.md §12.5, §12.6, §12.9) was not taken. Whatever
/// the cause, the side that refused it changed nothing: the caller drops the datagram and
/// counts it. Decoding and opening never trap.
public enum HandshakeError: Error, Equatable, Sendable {
  /// Not this message: another kind or size, or a field out of its range (§8's strictness:
  /// exact sizes, one encoding per value, reserved bytes zero).
  case malformed
  /// It echoes a nonce of no attempt this device holds (another device's, a finished
  /// attempt's, or made up).
  case unknownAttempt
  /// A seal or tag did not verify: altered, forged, replayed under another attempt's keys,
  /// or made with another device secret.
  case unopened
  /// The key exchange refused a public key (a low-order point: an all-zero shared secret),
  /// or the seam refused a size.
  case badKey
}
