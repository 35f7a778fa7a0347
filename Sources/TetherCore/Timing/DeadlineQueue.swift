/// The next deadline of each of many owners (the engines on one event loop), earliest
/// first: a binary min-heap indexed by owner slot.
///
/// Costs, with n owners queued: reading the earliest is O(1); setting, moving or removing
/// an owner's deadline is O(log n), and setting it to the instant it already has is O(1)
/// and touches nothing (the common case: a packet that does not move the owner's next
/// deadline). Memory is two arrays sized by the highest slot, grown at ``reserve(slots:)``
/// or when a new slot is first used, never while deadlines fire.
///
/// A heap rather than a timing wheel: deadlines here are few per owner, far apart and
/// unevenly spread (a heartbeat every second, a give-up 20 minutes away), and the loop
/// needs the exact earliest instant to arm one timer for it; a wheel would trade that
/// exactness for a tick.
public struct DeadlineQueue {
  struct Entry {
    var at: Instant
    var slot: Int32
  }

  private var heap: [Entry] = []
  /// Slot → its index in `heap`, or -1 when the slot has no deadline.
  private var positions: [Int32] = []

  public init() {}

  /// Owners with a deadline.
  public var count: Int { heap.count }

  /// The earliest deadline and its owner.
  public var earliest: (slot: Int32, at: Instant)? { heap.first.map { ($0.slot, $0.at) } }

  /// The deadline of `slot`, if it has one.
  public func deadline(of slot: Int32) -> Instant? {
    guard let index = position(of: slot) else { return nil }
    return heap[index].at
  }

  /// Makes room for slots 0..<`slots` (and for as many entries) now, so later calls do not
  /// grow the storage.
  public mutating func reserve(slots: Int) {
    if positions.count < slots {
      positions.append(contentsOf: repeatElement(-1, count: slots - positions.count))
    }
    heap.reserveCapacity(slots)
  }

  /// Gives `slot` the deadline `at`, or removes its deadline when `at` is nil. A negative
  /// slot is ignored.
  public mutating func schedule(_ slot: Int32, at: Instant?) {
    guard slot >= 0 else { return }
    guard let at else { return remove(slot) }
    if let index = position(of: slot) {
      let earlier = at < heap[index].at
      guard at != heap[index].at else { return }
      heap[index].at = at
      if earlier { siftUp(index) } else { siftDown(index) }
      return
    }
    reserve(slots: Int(slot) + 1)
    heap.append(Entry(at: at, slot: slot))
    positions[Int(slot)] = Int32(truncatingIfNeeded: heap.count - 1)
    siftUp(heap.count - 1)
  }

  /// Removes and returns the earliest deadline if it is due by `now`.
  public mutating func popEarliest(dueBy now: Instant) -> (slot: Int32, at: Instant)? {
    guard let first = heap.first, first.at <= now else { return nil }
    remove(first.slot)
    return (first.slot, first.at)
  }

  private func position(of slot: Int32) -> Int? {
    guard slot >= 0, Int(slot) < positions.count, positions[Int(slot)] >= 0 else { return nil }
    return Int(positions[Int(slot)])
  }

  private mutating func remove(_ slot: Int32) {
    guard let index = position(of: slot) else { return }
    positions[Int(slot)] = -1
    let last = heap.removeLast()
    guard index < heap.count else { return }
    heap[index] = last
    positions[Int(last.slot)] = Int32(truncatingIfNeeded: index)
    siftUp(index)
    siftDown(index)
  }

  private mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].at < heap[parent].at else { break }
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
      if left < heap.count, heap[left].at < heap[smallest].at { smallest = left }
      if right < heap.count, heap[right].at < heap[smallest].at { smallest = right }
      guard smallest != parent else { return }
      swapEntries(parent, smallest)
      parent = smallest
    }
  }

  private mutating func swapEntries(_ a: Int, _ b: Int) {
    heap.swapAt(a, b)
    positions[Int(heap[a].slot)] = Int32(truncatingIfNeeded: a)
    positions[Int(heap[b].slot)] = Int32(truncatingIfNeeded: b)
  }
}
