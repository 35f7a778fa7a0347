#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// What every engine on one libev loop shares: one timer for all their deadlines (the
/// ``DeadlineSource``), one netlink watcher, the queue of their next deadlines, and the
/// loop-wide lateness figures. Made when the first engine joins a loop and torn down when
/// the last one leaves (``LoopRegistry``); in between, used only from the loop's thread.
///
/// So a loop holds two descriptors whatever its number of engines (the timerfd and the
/// netlink socket), and each engine one (its UDP socket).
final class LoopContext {
  let loop: OpaquePointer
  /// The engines by slot; a slot is also the engine's key in `queue`.
  private var engines: [Engine?] = []
  private var freeSlots: [Int32] = []
  private(set) var engineCount = 0
  private var queue = DeadlineQueue()
  /// Every deadline of the loop that fired, and how late.
  private(set) var deadlines = DeadlineStats()
  private var source: DeadlineSource?
  private var netlink: NetlinkWatcher?
  /// The engines of the batch being fired (kept, so firing allocates nothing).
  private var batch: [Engine] = []
  private var firing = false

  init(loop: OpaquePointer) { self.loop = loop }

  /// Starts the timer and the netlink watcher (their data points back here).
  func start() {
    let data = Unmanaged.passUnretained(self).toOpaque()
    source = DeadlineSource(loop: loop, context: data)
    netlink = NetlinkWatcher(loop: loop, context: data)
  }

  /// Stops both watchers and closes their descriptors; nothing fires after this.
  func stop() {
    source?.stop(loop: loop)
    netlink?.stop(loop: loop)
    source = nil
    netlink = nil
  }

  var sourceKind: DeadlineSource.Kind { source?.kind ?? .evTimer }
  /// errno of the failed timerfd_create when the source is an ev_timer; 0 otherwise.
  var timerfdErrno: Int32 { source?.timerfdErrno ?? 0 }

  /// Runs `body` on the context behind a watcher's data pointer, keeping it alive until
  /// `body` returns even if the last engine leaves (and the registry lets go) inside it.
  static func enter(_ data: UnsafeMutableRawPointer?, _ body: (LoopContext) -> Void) {
    guard let data else { return }
    let context = Unmanaged<LoopContext>.fromOpaque(data).takeUnretainedValue()
    withExtendedLifetime(context) { body(context) }
  }

  // MARK: - Engines

  /// Takes `engine` in; its slot is its key in the deadline queue.
  func add(_ engine: Engine) -> Int32 {
    engineCount += 1
    if let slot = freeSlots.popLast() {
      engines[Int(slot)] = engine
      return slot
    }
    engines.append(engine)
    queue.reserve(slots: engines.count)
    return Int32(truncatingIfNeeded: engines.count - 1)
  }

  /// Lets the engine in `slot` go, with its deadline.
  func remove(slot: Int32) {
    guard slot >= 0, Int(slot) < engines.count, engines[Int(slot)] != nil else { return }
    queue.schedule(slot, at: nil)
    engines[Int(slot)] = nil
    freeSlots.append(slot)
    engineCount -= 1
    rearm()
  }

  /// The engine in `slot` next has something to do at `at` (nil: nothing scheduled).
  func schedule(slot: Int32, at: Instant?) {
    queue.schedule(slot, at: at)
    if !firing { rearm() }
  }

  func recordFired(due: Instant, at now: Instant) { deadlines.record(due: due, firedAt: now) }

  private func rearm() { source?.arm(at: queue.earliest?.at, loop: loop) }

  // MARK: - Events

  /// The timer went off. Every engine whose deadline is due runs it, earliest first: its
  /// state changes and callbacks. Only then do their datagrams go out, so when many
  /// deadlines fall due together (a gateway whose uplink died cuts every session at once)
  /// the last callback does not wait for the earlier engines' sends. Deadlines that fall
  /// due while the batch runs join it. Then each engine of the batch takes its next
  /// deadline, and the timer is armed once.
  func deadlinesDue() {
    source?.expired()
    firing = true
    var now = System.monotonicNow()
    // Each engine leaves the queue when it fires and comes back only in the second pass,
    // or through a call from a callback: the bound is never reached in practice.
    let limit = 2 * engines.count + 64
    while batch.count < limit, let (slot, due) = popDue(&now) {
      guard let engine = engines[Int(slot)] else { continue }
      batch.append(engine)
      engine.deadlineFired(due: due)
    }
    for engine in batch { engine.finishFiring() }
    batch.removeAll(keepingCapacity: true)
    firing = false
    rearm()
  }

  /// The earliest deadline due by `now`, looking at the clock again before saying none is.
  private func popDue(_ now: inout Instant) -> (Int32, Instant)? {
    if let popped = queue.popEarliest(dueBy: now) { return (popped.slot, popped.at) }
    guard queue.earliest != nil else { return nil }
    now = System.monotonicNow()
    return queue.popEarliest(dueBy: now).map { ($0.slot, $0.at) }
  }

  /// The netlink socket is readable: if an address was added or removed, every engine of
  /// the loop hears of it. (Rare, so the list of engines is copied without care.)
  func addressesMayHaveChanged() {
    guard let netlink, netlink.drain() else { return }
    for engine in engines.compactMap({ $0 }) { engine.addressesChanged() }
  }
}
