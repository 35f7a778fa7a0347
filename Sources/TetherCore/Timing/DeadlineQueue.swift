/// The next deadline window of each of many owners (the engines on one event loop): a
/// binary min-heap on the windows' ends, indexed by owner slot.
///
/// One timer serves them all, armed for the earliest end (``nextWakeUp``). When it goes
/// off, owners are taken in order of their ends for as long as their windows have started
/// (``popStarted(by:)``): so owners whose windows overlap (heartbeats) share the wake-up,
/// and an owner whose window is one instant (a threshold) runs exactly at it.
///
/// Costs, with n owners queued: reading the next wake-up is O(1); setting, moving or
/// removing an owner's window is O(log n), and setting it to the window it already has is
/// O(1) and touches nothing (the common case: a packet that does not move the owner's next
/// deadline). Memory is two arrays sized by the highest slot, grown at ``reserve(slots:)``
/// or when a new slot is first used, never while deadlines fire.
///
/// A heap rather than a timing wheel: deadlines here are few per owner, far apart and
/// unevenly spread (a heartbeat every second, a give-up 20 minutes away), and the loop
/// needs the exact earliest instant to arm one timer for it; a wheel would trade that
/// exactness for a tick.
public struct DeadlineQueue {
  struct Entry {
    var window: DeadlineWindow
    var slot: Int32
  }

  private var heap: [Entry] = []
  /// Slot → its index in `heap`, or -1 when the slot has no deadline.
  private var positions: [Int32] = []

  public init() {}

  /// Owners with a deadline.
  public var count: Int { heap.count }

  /// The earliest end of a window: when the timer must go off.
  public var nextWakeUp: Instant? { heap.first?.window.end }

  /// The window of `slot`, if it has one.
  public func window(of slot: Int32) -> DeadlineWindow? {
    guard let index = position(of: slot) else { return nil }
    return heap[index].window
  }

  /// Makes room for slots 0..<`slots` (and for as many entries) now, so later calls do not
  /// grow the storage.
  public mutating func reserve(slots: Int) {
    if positions.count < slots {
      positions.append(contentsOf: repeatElement(-1, count: slots - positions.count))
    }
    heap.reserveCapacity(slots)
  }

  /// Gives `slot` the window `window`, or removes its window when it is nil. A negative
  /// slot is ignored.
  public mutating func schedule(_ slot: Int32, _ window: DeadlineWindow?) {
    guard slot >= 0 else { return }
    guard let window else { return remove(slot) }
    if let index = position(of: slot) {
      guard window != heap[index].window else { return }
      let earlier = window.end < heap[index].window.end
      heap[index].window = window
      if earlier { siftUp(index) } else { siftDown(index) }
      return
    }
    reserve(slots: Int(slot) + 1)
    heap.append(Entry(window: window, slot: slot))
    positions[Int(slot)] = Int32(truncatingIfNeeded: heap.count - 1)
    siftUp(heap.count - 1)
  }

  /// Removes and returns the owner whose window ends first, if that window has started
  /// by `now` (and, unless `early` is true, if it has also ended: it must run now).
  public mutating func popStarted(by now: Instant, early: Bool = true)
    -> (slot: Int32, window: DeadlineWindow)?
  {
    guard let first = heap.first, first.window.start <= now else { return nil }
    guard early || first.window.end <= now else { return nil }
    remove(first.slot)
    return (first.slot, first.window)
  }

  private func position(of slot: Int32) -> Int? {
    guard slot >= 0, Int(slot) < positions.count, positions[Int(slot)] >= 0 else { return nil }
    return Int(positions[Int(slot)])
  }

  private mutating func remove(_ slot: Int32) {
    guard let index = position(of: slot) else { return }
    positions[Int(slot)] = -1
    guard let last = heap.popLast(), index < heap.count else { return }
    heap[index] = last
    positions[Int(last.slot)] = Int32(truncatingIfNeeded: index)
    siftUp(index)
    siftDown(index)
  }

  private mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].window.end < heap[parent].window.end else { break }
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
      if left < heap.count, heap[left].window.end < heap[smallest].window.end { smallest = left }
      if right < heap.count, heap[right].window.end < heap[smallest].window.end {
        smallest = right
      }
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
