/// A binary min-heap of member check times. It is touched only when a check falls due or
/// a member changes state, never when a member is merely heard from: that only writes the
/// member's last-seen time, and a check that finds the member fresher re-queues it
/// (libev's "be smart about timeouts", method 3, for many timers).
struct DeadlineHeap {
  struct Entry {
    /// When to look at the member again, on the members' clock (nanoseconds).
    var due: UInt64
    var slot: Int32
    /// The slot's generation when queued; a stale entry is dropped when it surfaces.
    var generation: UInt32
  }

  private var entries: [Entry] = []

  var count: Int { entries.count }
  var top: Entry? { entries.first }

  mutating func push(_ entry: Entry) {
    entries.append(entry)
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard entries[child].due < entries[parent].due else { break }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  mutating func popTop() -> Entry? {
    guard let first = entries.first, let last = entries.popLast() else { return nil }
    guard !entries.isEmpty else { return first }
    entries[0] = last
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < entries.count, entries[left].due < entries[smallest].due { smallest = left }
      if right < entries.count, entries[right].due < entries[smallest].due { smallest = right }
      guard smallest != parent else { break }
      entries.swapAt(parent, smallest)
      parent = smallest
    }
    return first
  }

  /// Empties the heap; keeps the storage (one element at a time: `removeAll(keepingCapacity:)`
  /// would cost the Embedded library a generic specialization of its own).
  mutating func removeAll() { while entries.popLast() != nil {} }
}
