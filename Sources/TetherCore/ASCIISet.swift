// SPDX-License-Identifier: Apache-2.0
/// A set of ASCII bytes as a 128-bit map: membership is two shifts and a mask, with no
/// Unicode tables (which the armv7 embedded standard library ships only as soft-float).
struct ASCIISet: Sendable {
  private var low: UInt64 = 0
  private var high: UInt64 = 0

  init(_ members: StaticString) {
    members.withUTF8Buffer { buffer in
      for byte in buffer { insert(byte) }
    }
  }

  init(range: ClosedRange<UInt8>) {
    for byte in range { insert(byte) }
  }

  /// The set whose bytes 0...63 are the bits of `low` and 64...127 those of `high`: a
  /// constant, where the other initializers run when the set is first used (a one-time
  /// initializer and a lock-free once in the Embedded library). ASCIISetTests checks the
  /// constants against the sets they spell.
  init(low: UInt64, high: UInt64) {
    self.low = low
    self.high = high
  }

  private mutating func insert(_ byte: UInt8) {
    if byte < 64 {
      low |= 1 << UInt64(byte)
    } else if byte < 128 {
      high |= 1 << UInt64(byte - 64)
    }
  }

  func contains(_ byte: UInt8) -> Bool {
    if byte < 64 { return low & (1 << UInt64(byte)) != 0 }
    if byte < 128 { return high & (1 << UInt64(byte - 64)) != 0 }
    return false
  }

  /// True when `bytes` has a length in `lengths` and every byte is in the set.
  func accepts<C: Collection>(_ bytes: C, lengths: ClosedRange<Int>) -> Bool
  where C.Element == UInt8 {
    // Arrays and slices (every caller of the library) through one non-generic check.
    if let accepted = bytes.withContiguousStorageIfAvailable({
      accepts(UnsafeRawBufferPointer($0), lengths: lengths)
    }) {
      return accepted
    }
    guard lengths.contains(bytes.count) else { return false }
    for byte in bytes where !contains(byte) { return false }
    return true
  }

  @inline(never)  // one copy for every element type
  func accepts(_ bytes: UnsafeRawBufferPointer, lengths: ClosedRange<Int>) -> Bool {
    guard lengths.contains(bytes.count) else { return false }
    for byte in bytes where !contains(byte) { return false }
    return true
  }

  /// Printable ASCII without space, 0x21...0x7E.
  static let visible = ASCIISet(low: 0xFFFF_FFFE_0000_0000, high: 0x7FFF_FFFF_FFFF_FFFF)
}
