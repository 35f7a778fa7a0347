// SPDX-License-Identifier: Apache-2.0
/// A 32-byte key held inline (four words), not in an array: a value that holds one is
/// copied as plain bytes, with no reference to count. A ``DatagramCipher`` keeps its key
/// in one, so ``SealedData`` and what holds it are plain values too (measured with
/// `make v2-size`, docs/PROTOCOL.md §12.16).
public struct KeyBytes: Sendable {
  /// The size of a key.
  public static var count: Int { 32 }
  private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

  /// The key of `bytes`; nil unless it has exactly 32 bytes.
  public init?(_ bytes: [UInt8]) {
    guard bytes.count == Self.count else { return nil }
    Swift.withUnsafeMutableBytes(of: &words) { words in
      bytes.withUnsafeBytes { words.copyMemory(from: $0) }
    }
  }

  /// Zeros.
  init() {}

  /// Four words, each the next 8 bytes read big-endian (a constant written out).
  init(bigEndian a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) {
    words = (a.bigEndian, b.bigEndian, c.bigEndian, d.bigEndian)
  }

  /// The first 32 bytes of `bytes` (the caller gives at least 32; zeros past a shorter one).
  init(_ bytes: ArraySlice<UInt8>) {
    withUnsafeMutableBytes { words in
      bytes.withUnsafeBytes {
        words.copyMemory(
          from: UnsafeRawBufferPointer(start: $0.baseAddress, count: min($0.count, 32)))
      }
    }
  }

  /// The key's bytes as an array (for a caller that keeps arrays).
  var bytes: [UInt8] {
    var bytes = [UInt8](repeating: 0, count: Self.count)
    withUnsafeBytes { key in bytes.withUnsafeMutableBytes { $0.copyMemory(from: key) } }
    return bytes
  }

  /// Calls `body` with the key's 32 bytes.
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    Swift.withUnsafeBytes(of: words, body)
  }

  /// Calls `body` with the key's 32 bytes, to write them.
  mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
    Swift.withUnsafeMutableBytes(of: &words, body)
  }

  /// Calls `body` with the key's 32 bytes where they are, to read them: through the
  /// mutable access, because ``withUnsafeBytes(_:)`` (`withUnsafeBytes(of:)` of a value)
  /// copies them first, which costs code and leaves an unwiped copy of the key on the
  /// stack (`make v2-size`, docs/PROTOCOL.md §12.16).
  mutating func withBytesInPlace<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    Swift.withUnsafeMutableBytes(of: &words) { body(UnsafeRawBufferPointer($0)) }
  }
}
