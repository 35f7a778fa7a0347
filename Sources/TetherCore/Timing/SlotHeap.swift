// SPDX-License-Identifier: Apache-2.0
/// A binary min-heap of entries ordered by `key`: the one heap behind ``DeadlineQueue``
/// (one entry per slot, found through `positions`) and ``DeadlineHeap`` (member checks,
/// several entries per slot, no positions). One type for both keeps one copy of the heap
/// code, and of the Array code it needs, in the Embedded library.
struct SlotHeap {
  struct Entry: Equatable {
    /// What the heap orders by: a time in nanoseconds.
    var key: UInt64
    /// Carried along for the owner (a window's start; a member check's generation).
    var payload: UInt64
    var slot: Int32
  }

  private(set) var entries: [Entry] = []
  /// Slot → the index of its entry, or -1 when it has none. Kept for the slots below
  /// `positions.count` only: a heap with several entries per slot leaves it empty.
  var positions = SlotTable()

  var count: Int { entries.count }
  var first: Entry? { entries.first }

  mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

  @inline(never)  // one copy, not one inlined at each of the member checks' pushes
  mutating func push(_ entry: Entry) {
    Entry.add(entry, to: &entries)
    notePosition(entries.count - 1)
    settle(entries.count - 1)
  }

  /// Gives the entry at `index` a new value (the same slot) and moves it to its place.
  mutating func replace(at index: Int, with entry: Entry) {
    Entry.put(entry, at: index, in: &entries)
    settle(index)
  }

  /// Removes the entry at `index`: the last entry takes its place and moves to its own.
  /// The removed entry's position is the caller's to clear.
  @inline(never)  // as push
  mutating func remove(at index: Int) {
    guard let last = entries.popLast(), index < entries.count else { return }
    Entry.put(last, at: index, in: &entries)
    notePosition(index)
    settle(index)
  }

  /// Empties the heap; keeps the storage (one entry at a time: `removeAll(keepingCapacity:)`
  /// would cost the Embedded library a generic specialization of its own).
  mutating func removeAll() { Entry.shorten(&entries, to: 0) }

  /// Moves the entry at `index` (within the heap) to its place: up past larger parents,
  /// then down from `index` past smaller children. An entry that moved up leaves at
  /// `index` a former ancestor, no larger than anything below it, and one that cannot
  /// move up (not smaller than its parent) moves down as far as it must: so every change
  /// of one entry (a push, a replacement, a removal's move) is this one call. Over the
  /// entries' storage in place: one uniqueness check, no bounds check per access (every
  /// index is a heap index below the count), the positions moved out meanwhile.
  @inline(never)
  private mutating func settle(_ index: Int) {
    precondition(index >= 0 && index < entries.count)
    var table = SlotTable()
    swap(&table, &positions)
    entries.withUnsafeMutableBufferPointer { Self.settle(index, in: $0, positions: &table) }
    swap(&table, &positions)
  }

  private static func settle(
    _ start: Int, in entries: UnsafeMutableBufferPointer<Entry>, positions: inout SlotTable
  ) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard entries[child].key < entries[parent].key else { break }
      swapEntries(child, parent, in: entries, positions: &positions)
      child = parent
    }
    var parent = start
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < entries.count, entries[left].key < entries[smallest].key { smallest = left }
      if right < entries.count, entries[right].key < entries[smallest].key { smallest = right }
      guard smallest != parent else { return }
      swapEntries(parent, smallest, in: entries, positions: &positions)
      parent = smallest
    }
  }

  @inline(never)  // four callers in the walk
  private static func swapEntries(
    _ a: Int, _ b: Int, in entries: UnsafeMutableBufferPointer<Entry>,
    positions: inout SlotTable
  ) {
    entries.swapAt(a, b)
    notePosition(a, of: entries[a], in: &positions)
    notePosition(b, of: entries[b], in: &positions)
  }

  private mutating func notePosition(_ index: Int) {
    Self.notePosition(index, of: entries[index], in: &positions)
  }

  private static func notePosition(_ index: Int, of entry: Entry, in positions: inout SlotTable) {
    let slot = Int(entry.slot)
    if slot >= 0, slot < positions.count { positions[slot] = Int32(truncatingIfNeeded: index) }
  }
}

extension SlotHeap.Entry {
  /// Drops the entries past the first `count`, keeping the storage: one loop for every
  /// array of entries (the heaps, the members, the departures, a session's actions).
  /// Appends `entry`: one copy of the append for every array of heap entries.
  @inline(never)
  static func add(_ entry: Self, to entries: inout [Self]) { entries.append(entry) }

  /// Stores `entry` at `index` (which must be within `entries`, as the subscript's): one
  /// copy of the store for every array of heap entries.
  @inline(never)
  static func put(_ entry: Self, at index: Int, in entries: inout [Self]) {
    entries[index] = entry
  }

  @inline(never)
  static func shorten(_ entries: inout [Self], to count: Int) {
    while entries.count > count, entries.popLast() != nil {}
  }
}
