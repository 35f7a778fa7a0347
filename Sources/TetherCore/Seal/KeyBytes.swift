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
    withUnsafeMutableBytes(of: &words) { words in
      bytes.withUnsafeBytes { words.copyMemory(from: $0) }
    }
  }

  /// Calls `body` with the key's 32 bytes.
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    Swift.withUnsafeBytes(of: words, body)
  }
}
