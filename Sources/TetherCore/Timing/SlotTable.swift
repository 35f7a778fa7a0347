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

  @inline(never)  // one copy for every reader
  private static func read(_ bytes: [UInt8], at index: Int) -> Int32 {
    let at = 4 * index
    return Int32(
      bitPattern: UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16
        | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3]))
  }

  @inline(never)  // one copy for every writer
  private static func write(_ value: Int32, into bytes: inout [UInt8], at index: Int) {
    let at = 4 * index
    let word = UInt32(bitPattern: value)
    bytes[at] = UInt8(truncatingIfNeeded: word >> 24)
    bytes[at + 1] = UInt8(truncatingIfNeeded: word >> 16)
    bytes[at + 2] = UInt8(truncatingIfNeeded: word >> 8)
    bytes[at + 3] = UInt8(truncatingIfNeeded: word)
  }
}
