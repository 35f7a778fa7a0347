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
    entries.append(entry)
    notePosition(entries.count - 1)
    siftUp(entries.count - 1)
  }

  /// Gives the entry at `index` a new value (the same slot) and moves it to its place.
  mutating func replace(at index: Int, with entry: Entry) {
    let earlier = entry.key < entries[index].key
    entries[index] = entry
    if earlier { siftUp(index) } else { siftDown(index) }
  }

  /// Removes the entry at `index`: the last entry takes its place and moves to its own.
  /// The removed entry's position is the caller's to clear.
  @inline(never)  // as push
  mutating func remove(at index: Int) {
    guard let last = entries.popLast(), index < entries.count else { return }
    entries[index] = last
    notePosition(index)
    siftUp(index)
    siftDown(index)
  }

  /// Empties the heap; keeps the storage (one entry at a time: `removeAll(keepingCapacity:)`
  /// would cost the Embedded library a generic specialization of its own).
  mutating func removeAll() { while entries.popLast() != nil {} }

  private mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard entries[child].key < entries[parent].key else { break }
      swapEntries(child, parent)
      child = parent
    }
  }

  private mutating func siftDown(_ start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < entries.count, entries[left].key < entries[smallest].key { smallest = left }
      if right < entries.count, entries[right].key < entries[smallest].key { smallest = right }
      guard smallest != parent else { return }
      swapEntries(parent, smallest)
      parent = smallest
    }
  }

  private mutating func swapEntries(_ a: Int, _ b: Int) {
    entries.swapAt(a, b)
    notePosition(a)
    notePosition(b)
  }

  private mutating func notePosition(_ index: Int) {
    let slot = Int(entries[index].slot)
    if slot >= 0, slot < positions.count { positions[slot] = Int32(truncatingIfNeeded: index) }
  }
}
