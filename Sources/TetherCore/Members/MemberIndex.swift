// SPDX-License-Identifier: Apache-2.0
/// Which slot of ``RemoteMembers`` holds which uid: an open-addressing hash table of slot
/// numbers (linear probing, at most half full, deletion by backward shift), so a lookup
/// is one multiply and, on average, under two probes, whatever the member count.
///
/// The table stores slot numbers only; a slot's uid is read from `members`. It stands in
/// for a `[UInt32: Int32]` dictionary, whose generic hashing and storage code was the
/// largest single part of the Embedded library that did not do the library's own work.
struct MemberIndex {
  /// A slot number, or `empty`. Its length is zero or a power of two.
  private var table = SlotTable()
  /// Uids indexed.
  private(set) var count = 0

  private static let empty: Int32 = -1

  /// The slot holding `uid`, if any.
  func find(_ uid: UInt32, in members: [RemoteMembers.Member]) -> Int32? {
    guard !table.isEmpty else { return nil }
    var index = home(of: uid)
    while table[index] != Self.empty {
      if members[Int(table[index])].uid == uid { return table[index] }
      index = (index + 1) & (table.count - 1)
    }
    return nil
  }

  /// Indexes `slot` under `uid`, which must not be indexed yet. Grows the table (the only
  /// time it allocates) when it would become more than half full.
  mutating func insert(_ slot: Int32, uid: UInt32, in members: [RemoteMembers.Member]) {
    if 2 * (count + 1) > table.count { grow(in: members) }
    place(slot, uid: uid)
    count += 1
  }

  /// Forgets `uid`, if it is indexed.
  mutating func remove(_ uid: UInt32, in members: [RemoteMembers.Member]) {
    guard !table.isEmpty else { return }
    let mask = table.count - 1
    var hole = home(of: uid)
    while table[hole] != Self.empty && members[Int(table[hole])].uid != uid {
      hole = (hole + 1) & mask
    }
    guard table[hole] != Self.empty else { return }
    count -= 1
    // Moves back every later entry of the run that may no longer be found past the hole.
    var next = hole
    while true {
      next = (next + 1) & mask
      guard table[next] != Self.empty else { break }
      let wanted = home(of: members[Int(table[next])].uid)
      // `next` may fill the hole unless its home lies cyclically in (hole, next].
      let stays =
        hole <= next ? (hole < wanted && wanted <= next) : (hole < wanted || wanted <= next)
      if !stays {
        table[hole] = table[next]
        hole = next
      }
    }
    table[hole] = Self.empty
  }

  /// Forgets every uid; keeps the storage.
  mutating func removeAll() {
    for index in 0..<table.count { table[index] = Self.empty }
    count = 0
  }

  private func home(of uid: UInt32) -> Int {
    // Fibonacci hashing: the high bits of the product spread neighbouring uids.
    Int(truncatingIfNeeded: (UInt64(uid) &* 0x9E37_79B9_7F4A_7C15) >> 32) & (table.count - 1)
  }

  private mutating func place(_ slot: Int32, uid: UInt32) {
    var index = home(of: uid)
    while table[index] != Self.empty { index = (index + 1) & (table.count - 1) }
    table[index] = slot
  }

  private mutating func grow(in members: [RemoteMembers.Member]) {
    let old = table
    table = SlotTable()
    // One element at a time: `append(contentsOf: repeatElement(…))` was a specialization of
    // its own (264 bytes of aarch64 text), this the append the free slots use already.
    let size = max(16, 2 * old.count)
    while table.count < size { table.append(Self.empty) }
    for index in 0..<old.count where old[index] != Self.empty {
      place(old[index], uid: members[Int(old[index])].uid)
    }
  }
}
