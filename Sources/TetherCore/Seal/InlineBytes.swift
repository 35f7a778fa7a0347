// SPDX-License-Identifier: Apache-2.0
/// 256 bytes held inline (eight ``KeyBytes``), not in an array: the device keeps every
/// value of version 2 that has a fixed size in one of these (the token's `W` and secret,
/// the request, the CONFIRM it repeats), so the layer's state is plain bytes, copied with
/// no allocation and no reference to count (`make v2-size`, docs/PROTOCOL.md §12.16). One
/// type for all of them, so its few calls are compiled once.
public struct InlineBytes: Sendable {
  /// How many bytes it holds.
  public static var capacity: Int { 256 }
  private var words:
    (KeyBytes, KeyBytes, KeyBytes, KeyBytes, KeyBytes, KeyBytes, KeyBytes, KeyBytes) =
      (.init(), .init(), .init(), .init(), .init(), .init(), .init(), .init())

  /// Zeros.
  public init() {}

  /// Calls `body` with the 256 bytes.
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    Swift.withUnsafeBytes(of: words, body)
  }

  /// Calls `body` with the 256 bytes, to write them.
  public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) -> R)
    -> R
  {
    Swift.withUnsafeMutableBytes(of: &words, body)
  }

  /// The first `count` bytes as an array (for a caller that keeps arrays: tests, the edge).
  func array(_ range: Range<Int>) -> [UInt8] {
    withUnsafeBytes { Array($0[range.clamped(to: 0..<Self.capacity)]) }
  }
}

/// Copies `source` into `target` from `offset`: false, and nothing copied, unless it fits.
/// Every copy of the device's raw buffers goes through this one check.
@inline(never)
func copy(
  _ source: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer, at offset: Int
) -> Bool {
  guard offset >= 0, offset <= target.count, source.count <= target.count - offset else {
    return false
  }
  if let from = source.baseAddress, let to = target.baseAddress {
    (to + offset).copyMemory(from: from, byteCount: source.count)
  }
  return true
}

/// `bytes[offset ..< offset + count]`, or an empty buffer if that is not within `bytes`.
@inline(never)
func piece(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ count: Int)
  -> UnsafeRawBufferPointer
{
  guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset,
    let base = bytes.baseAddress
  else { return UnsafeRawBufferPointer(start: nil, count: 0) }
  return UnsafeRawBufferPointer(start: base + offset, count: count)
}

/// `bytes[offset ..< offset + count]` to write, or an empty buffer if that is not within it.
/// The same body as the read-only one on purpose: LLVM merges the two into one function,
/// where a call of one from the other measured 44 bytes more (`make v2-size`).
@inline(never)
func piece(_ bytes: UnsafeMutableRawBufferPointer, _ offset: Int, _ count: Int)
  -> UnsafeMutableRawBufferPointer
{
  guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset,
    let base = bytes.baseAddress
  else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
  return UnsafeMutableRawBufferPointer(start: base + offset, count: count)
}

/// The big-endian unsigned integer of `width` bytes (at most 8) at `offset` of `bytes`; 0
/// past its end.
@inline(never)
func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int) -> UInt64 {
  let field = piece(bytes, offset, width)
  var value: UInt64 = 0
  for byte in field { value = value << 8 | UInt64(byte) }
  return value
}

/// Writes the low `width` bytes of `value` big-endian into `bytes` from `offset` (nothing
/// past its end).
@inline(never)
func putBigEndian(
  _ value: UInt64, width: Int, into bytes: UnsafeMutableRawBufferPointer, at offset: Int
) {
  let field = piece(bytes, offset, width)
  for i in 0..<field.count {
    field[i] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (field.count - 1 - i)))
  }
}
