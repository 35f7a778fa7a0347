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

  /// Seals in place: `datagram[adCount ..< datagram.count - tagLength]` is the plaintext,
  /// replaced by its ciphertext, `datagram[..<adCount]` the associated data, and the tag is
  /// written into the last ``tagLength`` bytes. False if the cipher refused or a size is
  /// wrong. The device's path: nothing copied, no array.
  func seal(counter: UInt64, inPlace datagram: UnsafeMutableRawBufferPointer, adCount: Int)
    -> Bool

  /// Writes the plaintext of `sealed` (ciphertext, then the tag) into `out` (exactly its
  /// size) if it opens under `counter`'s nonce with `ad`; false if not.
  func open(
    counter: UInt64, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
    into out: UnsafeMutableRawBufferPointer
  ) -> Bool
}

extension DatagramCipher {
  // The calls on raw buffers through the array calls, for a cipher that has only those (a
  // test's stand-in): the same bytes, copies more.

  public func seal(counter: UInt64, inPlace datagram: UnsafeMutableRawBufferPointer, adCount: Int)
    -> Bool
  {
    guard adCount >= 0, datagram.count - adCount >= Self.tagLength else { return false }
    var out = Array(UnsafeRawBufferPointer(piece(datagram, 0, adCount)))
    let plaintext = Array(
      UnsafeRawBufferPointer(piece(datagram, adCount, datagram.count - adCount - Self.tagLength)))
    guard seal(counter: counter, plaintext: plaintext[...], appendingTo: &out, adStart: 0),
      out.count == datagram.count
    else { return false }
    datagram.copyBytes(from: out)
    return true
  }

  public func open(
    counter: UInt64, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
    into out: UnsafeMutableRawBufferPointer
  ) -> Bool {
    var plaintext: [UInt8] = []
    guard open(counter: counter, ad: Array(ad)[...], sealed: Array(sealed)[...], into: &plaintext),
      plaintext.count == out.count
    else { return false }
    out.copyBytes(from: plaintext)
    return true
  }

  /// The 12-byte nonce of `counter`: four zero bytes, then the counter big-endian.
  public static func nonce(counter: UInt64) -> [UInt8] {
    var nonce = [UInt8](repeating: 0, count: 12)
    for i in 0..<8 { nonce[4 + i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
    return nonce
  }
}
