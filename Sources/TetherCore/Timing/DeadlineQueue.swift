// SPDX-License-Identifier: Apache-2.0
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
  /// Keyed on each window's end, carrying its start; `positions` finds a slot's entry.
  private var heap = SlotHeap()

  public init() {}

  /// Owners with a deadline.
  public var count: Int { heap.count }

  /// The earliest end of a window: when the timer must go off.
  public var nextWakeUp: Instant? { heap.first.map { Instant(nanoseconds: $0.key) } }

  /// The window of `slot`, if it has one.
  public func window(of slot: Int32) -> DeadlineWindow? {
    guard let index = position(of: slot) else { return nil }
    return Self.window(heap.entries[index])
  }

  /// Makes room for slots 0..<`slots` (and for as many entries) now, so later calls do not
  /// grow the storage.
  public mutating func reserve(slots: Int) {
    // One element at a time: `append(contentsOf: repeatElement(…))` was a specialization of
    // its own (as in MemberIndex.grow).
    while heap.positions.count < slots { heap.positions.append(-1) }
    heap.reserveCapacity(slots)
  }

  /// Gives `slot` the window `window`, or removes its window when it is nil. A negative
  /// slot is ignored.
  public mutating func schedule(_ slot: Int32, _ window: DeadlineWindow?) {
    guard slot >= 0 else { return }
    guard let window else { return remove(slot) }
    let entry = SlotHeap.Entry(
      key: window.end.nanoseconds, payload: window.start.nanoseconds, slot: slot)
    if let index = position(of: slot) {
      guard entry != heap.entries[index] else { return }
      heap.replace(at: index, with: entry)
      return
    }
    reserve(slots: Int(slot) + 1)
    heap.push(entry)
  }

  /// Removes and returns the owner whose window ends first, if that window has started
  /// by `now` (and, unless `early` is true, if it has also ended: it must run now).
  public mutating func popStarted(by now: Instant, early: Bool = true)
    -> (slot: Int32, window: DeadlineWindow)?
  {
    guard let first = heap.first else { return nil }
    let window = Self.window(first)
    guard window.start <= now, early || window.end <= now else { return nil }
    remove(first.slot)
    return (first.slot, window)
  }

  private static func window(_ entry: SlotHeap.Entry) -> DeadlineWindow {
    var window = DeadlineWindow(start: Instant(nanoseconds: entry.payload))
    window.end = Instant(nanoseconds: entry.key)
    return window
  }

  private func position(of slot: Int32) -> Int? {
    let positions = heap.positions
    guard slot >= 0, Int(slot) < positions.count, positions[Int(slot)] >= 0 else { return nil }
    return Int(positions[Int(slot)])
  }

  private mutating func remove(_ slot: Int32) {
    guard let index = position(of: slot) else { return }
    heap.positions[Int(slot)] = -1
    heap.remove(at: index)
  }
}
