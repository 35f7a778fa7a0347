// SPDX-License-Identifier: Apache-2.0
/// The seam through which protocol version 2 seals and opens (docs/PROTOCOL.md §12.7): one
/// direction's ChaCha20-Poly1305 (IETF) key, filled by the driver and the edge with
/// libsodium. TetherCore writes no cryptography and imports nothing: it takes a cipher as a
/// generic parameter, never as an existential (which Embedded Swift cannot hold cheaply).
///
/// The nonce is `0^4 ‖ counter` (big-endian), so a key never sees one twice as long as
/// each counter is sealed once, which ``KeyUsage`` guarantees. Both calls write into the
/// caller's buffer: nothing is copied on the way.
public protocol DatagramCipher {
  /// The tag's length in bytes (16 for ChaCha20-Poly1305).
  static var tagLength: Int { get }

  /// Seals `plaintext` under `counter`'s nonce, with `out[adStart...]` (the bytes already
  /// there) as associated data, and appends the ciphertext and the tag to `out`. Returns
  /// false if the cipher refused (then `out` is as it was).
  func seal(
    counter: UInt64, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8],
    adStart: Int
  ) -> Bool

  /// Appends the plaintext of `sealed` (ciphertext, then the tag) to `out` if it opens
  /// under `counter`'s nonce with `ad`; returns false (and leaves `out` as it was) if not.
  func open(
    counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool
}

extension DatagramCipher {
  /// The 12-byte nonce of `counter`: four zero bytes, then the counter big-endian.
  public static func nonce(counter: UInt64) -> [UInt8] {
    var nonce = [UInt8](repeating: 0, count: 12)
    for i in 0..<8 { nonce[4 + i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
    return nonce
  }
}
