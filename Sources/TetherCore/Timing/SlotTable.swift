// SPDX-License-Identifier: Apache-2.0
/// A growable table of slot numbers (`Int32`), four bytes each in a byte array: the member
/// index's hash table, the deadline queue's positions and the free slot lists. Held as
/// bytes so that the Embedded library holds no array code for `Int32` beside the byte
/// array's it has anyway (about 0.4 KB of aarch64 text). An index outside the table traps,
/// as an array's does.
package struct SlotTable {
  private var bytes: [UInt8] = []

  package init() {}

  package var count: Int { bytes.count / 4 }
  package var isEmpty: Bool { bytes.isEmpty }

  package subscript(index: Int) -> Int32 {
    get { Self.read(bytes, at: index) }
    set { Self.write(newValue, into: &bytes, at: index) }
  }

  package mutating func append(_ value: Int32) {
    bytes.appendBigEndian(UInt64(UInt32(bitPattern: value)), byteCount: 4)
  }

  // Each reads or writes its four bytes at once, checked once (as the array's subscript
  // checks each byte: a slot outside the table traps, as it did).
  @inline(never)  // one copy for every reader
  private static func read(_ bytes: [UInt8], at index: Int) -> Int32 {
    let at = 4 * index
    precondition(at >= 0 && at <= bytes.count - 4)
    return bytes.withUnsafeBytes {
      Int32(bigEndian: $0.loadUnaligned(fromByteOffset: at, as: Int32.self))
    }
  }

  @inline(never)  // one copy for every writer
  private static func write(_ value: Int32, into bytes: inout [UInt8], at index: Int) {
    let at = 4 * index
    precondition(at >= 0 && at <= bytes.count - 4)
    bytes.withUnsafeMutableBytes {
      $0.storeBytes(of: value.bigEndian, toByteOffset: at, as: Int32.self)
    }
  }
}
