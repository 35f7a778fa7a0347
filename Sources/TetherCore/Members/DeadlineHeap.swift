// SPDX-License-Identifier: Apache-2.0
/// A binary min-heap of member check times. It is touched only when a check falls due or
/// a member changes state, never when a member is merely heard from: that only writes the
/// member's last-seen time, and a check that finds the member fresher re-queues it
/// (libev's "be smart about timeouts", method 3, for many timers). A slot may have several
/// entries, so the ``SlotHeap`` below keeps no positions.
struct DeadlineHeap {
  struct Entry {
    /// When to look at the member again, on the members' clock (nanoseconds).
    var due: UInt64
    var slot: Int32
    /// The slot's generation when queued; a stale entry is dropped when it surfaces.
    var generation: UInt32
  }

  private var heap = SlotHeap()

  var count: Int { heap.count }
  var top: Entry? {
    guard let first = heap.first else { return nil }
    return Entry(
      due: first.key, slot: first.slot, generation: UInt32(truncatingIfNeeded: first.payload))
  }

  mutating func push(_ entry: Entry) {
    heap.push(.init(key: entry.due, payload: UInt64(entry.generation), slot: entry.slot))
  }

  mutating func popTop() -> Entry? {
    guard let first = top else { return nil }
    heap.remove(at: 0)
    return first
  }

  /// Empties the heap; keeps the storage.
  mutating func removeAll() { heap.removeAll() }
}
