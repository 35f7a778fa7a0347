// SPDX-License-Identifier: Apache-2.0
/// Reads big-endian fields from a datagram, front to back, throwing ``WireError/truncated``
/// instead of reading past the end. Package-wide, not public: the edge server's own
/// datagrams (admin) use the same reader as the protocol's.
package struct ByteReader {
  package private(set) var rest: ArraySlice<UInt8>

  package init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

  package mutating func bytes(_ count: Int) throws(WireError) -> ArraySlice<UInt8> {
    guard count >= 0, rest.count >= count else { throw .truncated }
    // Index arithmetic, not prefix/dropFirst: no Collection specializations for them.
    let end = rest.startIndex + count  // within rest: count <= rest.count
    let field = rest[rest.startIndex..<end]
    rest = rest[end..<rest.endIndex]
    return field
  }

  // Every integer read goes through one out-of-line `unsigned(_:)`: the wire decoder calls
  // them some forty times, and an inlined loop at each call cost more than the call.
  package mutating func u8() throws(WireError) -> UInt8 {
    UInt8(truncatingIfNeeded: try unsigned(1))
  }
  package mutating func u16() throws(WireError) -> UInt16 {
    UInt16(truncatingIfNeeded: try unsigned(2))
  }
  package mutating func u32() throws(WireError) -> UInt32 {
    UInt32(truncatingIfNeeded: try unsigned(4))
  }
  package mutating func u64() throws(WireError) -> UInt64 { try unsigned(8) }

  @inline(never)
  private mutating func unsigned(_ width: Int) throws(WireError) -> UInt64 {
    var value: UInt64 = 0
    for byte in try bytes(width) { value = value << 8 | UInt64(byte) }
    return value
  }

  /// A field of `lengthWidth` bytes of length, then that many bytes.
  package mutating func prefixed(lengthWidth: Int) throws(WireError) -> ArraySlice<UInt8> {
    let length = lengthWidth == 1 ? Int(try u8()) : Int(try u16())
    return try bytes(length)
  }

  /// A field as ``prefixed(lengthWidth:)`` reads it, whose length must be in `lengths` and
  /// whose bytes must all be in `allowed` (else ``WireError/invalidField``): the one check
  /// of every string field the decoder reads.
  @inline(never)
  mutating func prefixed(lengthWidth: Int, allowed: ASCIISet, lengths: ClosedRange<Int>)
    throws(WireError) -> ArraySlice<UInt8>
  {
    let bytes = try prefixed(lengthWidth: lengthWidth)
    guard allowed.accepts(bytes, lengths: lengths) else { throw .invalidField }
    return bytes
  }

  /// Throws ``WireError/trailingBytes`` unless every byte was read.
  package func expectEnd() throws(WireError) {
    guard rest.isEmpty else { throw .trailingBytes }
  }
}

extension Array where Element == UInt8 {
  /// Appends `value` big-endian (network order).
  package mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
    if T.bitWidth <= 64 {
      // One out-of-line loop for every width, not one specialization per integer type.
      appendBigEndian(UInt64(truncatingIfNeeded: value), byteCount: T.bitWidth / 8)
    } else {
      var shift = T.bitWidth - 8
      while shift >= 0 {
        append(UInt8(truncatingIfNeeded: value >> shift))
        shift -= 8
      }
    }
  }

  /// Appends one byte through the out-of-line loop below: a call where an inlined
  /// `append(_:)` (its uniqueness and capacity checks) is some forty bytes of code at each
  /// of the encoder's many single-byte fields (and the driver's copies of C strings).
  package mutating func appendByte(_ byte: UInt8) {
    appendBigEndian(UInt64(byte), byteCount: 1)
  }

  /// Appends the low `byteCount` bytes of `value`, most significant first.
  @usableFromInline @inline(never)
  mutating func appendBigEndian(_ value: UInt64, byteCount: Int) {
    var shift = 8 * (byteCount - 1)
    while shift >= 0 {
      append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
      shift -= 8
    }
  }

  /// A length of `lengthWidth` bytes (1 or 2), then the bytes. Callers keep `field` within
  /// that width: every string type the codec writes is bounded well below it.
  @inline(never)  // eight string fields in the encoder: one copy of this, not eight
  mutating func appendPrefixed(_ field: [UInt8], lengthWidth: Int) {
    if lengthWidth == 1 {
      appendByte(UInt8(truncatingIfNeeded: field.count))
    } else {
      appendBigEndian(UInt16(truncatingIfNeeded: field.count))
    }
    append(contentsOf: field[...])  // as a slice: the encoder's one append(contentsOf:)
  }
}
