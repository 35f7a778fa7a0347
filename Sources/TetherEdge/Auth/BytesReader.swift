/// Reads big-endian fields front to back; every read returns nil instead of running past
/// the end (the server's own reader: TetherCore's is internal to the wire codec).
struct BytesReader {
  private(set) var rest: ArraySlice<UInt8>

  init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

  mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
    guard count >= 0, rest.count >= count else { return nil }
    defer { rest = rest.dropFirst(count) }
    return rest.prefix(count)
  }

  mutating func u8() -> UInt8? { bytes(1)?.first }

  mutating func u32() -> UInt32? { unsigned(4).map { UInt32(truncatingIfNeeded: $0) } }

  mutating func u64() -> UInt64? { unsigned(8) }

  /// A one-byte length, then that many bytes.
  mutating func prefixed() -> ArraySlice<UInt8>? {
    guard let length = u8() else { return nil }
    return bytes(Int(length))
  }

  private mutating func unsigned(_ width: Int) -> UInt64? {
    guard let field = bytes(width) else { return nil }
    var value: UInt64 = 0
    for byte in field { value = value << 8 | UInt64(byte) }
    return value
  }
}

extension Array where Element == UInt8 {
  mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
    var shift = T.bitWidth - 8
    while shift >= 0 {
      append(UInt8(truncatingIfNeeded: value >> shift))
      shift -= 8
    }
  }
}
