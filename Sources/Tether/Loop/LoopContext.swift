// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// What every connection (channel engine or login client) on one libev loop shares: one
/// timer for all their deadlines (the ``DeadlineSource``), one netlink watcher, the queue
/// of their next deadlines, the loop-wide lateness figures, and the count of entries into
/// them under way (Lifecycle.swift). Made when the first connection joins a loop and torn
/// down when the last one leaves (``LoopRegistry``); in between, used only from the loop's
/// thread.
///
/// So a loop holds two descriptors whatever its number of connections (the timerfd and the
/// netlink socket), and each connection one (its UDP socket).
final class LoopContext {
  let loop: OpaquePointer
  /// The connections by slot; a slot is also the connection's key in `queue`.
  private var connections: [Connection?] = []
  private var freeSlots = SlotStack()
  private(set) var connectionCount = 0
  private var queue = DeadlineQueue()
  /// Every deadline of the loop that fired, and how late.
  var deadlines = DeadlineStats()
  private var source: DeadlineSource?
  private var netlink: NetlinkWatcher?
  /// The connections of the batch being fired (kept, so firing allocates nothing).
  /// Optional only to share the array type of `connections` (one set of array code).
  private var batch: [Connection?] = []
  private var firing = false
  /// Connections taken early in the current wake-up (see ``earlyPerWakeUp``).
  private var earlyTaken = 0
  /// Where the connections receive: room for one batch of datagrams. Shared, since the
  /// loop's thread reads one socket at a time.
  private var received = [UInt8](repeating: 0, count: Int(TETHER_SYS_BATCH) * datagramRoom)
  private let receivedHeaders = UnsafeMutablePointer<tether_sys_batch>.allocate(capacity: 1)
  private var receiving = false
  /// The next context of ``LoopRegistry``'s list (under the registry's lock).
  var nextInRegistry: LoopContext?
  /// Entries into this loop's connections under way (Lifecycle.swift).
  var entries = 0
  /// Connections destroyed while an entry was under way: the app's references are given
  /// back when the outermost entry returns. (Optional, as `batch`, for the array type of
  /// `connections`.)
  var destroyedConnections: [Connection?] = []
  /// Room for one datagram: one byte more than the largest, so a longer one is seen as such.
  static let datagramRoom = Packet.maximumSize + 1
  private var datagramRoom: Int { Self.datagramRoom }

  init(loop: OpaquePointer) {
    self.loop = loop
    receivedHeaders.initialize(to: tether_sys_batch())
  }

  deinit {
    receivedHeaders.deinitialize(count: 1)
    receivedHeaders.deallocate()
  }

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
  /// `body` returns even if the last connection leaves (and the registry lets go) inside it.
  static func enter(_ data: UnsafeMutableRawPointer?, _ body: (LoopContext) -> Void) {
    guard let data else { return }
    let context = Unmanaged<LoopContext>.fromOpaque(data).takeUnretainedValue()
    withExtendedLifetime(context) { body(context) }
  }

  /// Appends `connection` to one of the loop's lists: one copy of the append for the three.
  @inline(never)
  static func add(_ connection: Connection, to list: inout [Connection?]) {
    list.append(connection)
  }

  // MARK: - Connections

  /// Takes `connection` in; its slot is its key in the deadline queue.
  func add(_ connection: Connection) -> Int32 {
    connectionCount += 1
    if let slot = freeSlots.pop() {
      connections[Int(slot)] = connection
      return slot
    }
    Self.add(connection, to: &connections)
    queue.reserve(slots: connections.count)
    // Firing allocates nothing: the batch has room for every connection (a connection is in it at
    // most once while its datagrams wait; only one that fires again after they went, in a
    // batch longer than its next deadline, can need more).
    let room = connections.count + 64
    if batch.capacity < room { batch.reserveCapacity(max(room, 2 * batch.capacity)) }
    return Int32(truncatingIfNeeded: connections.count - 1)
  }

  /// Lets the connection in `slot` go, with its deadline.
  func remove(slot: Int32) {
    guard slot >= 0, Int(slot) < connections.count, connections[Int(slot)] != nil else { return }
    queue.schedule(slot, nil)
    connections[Int(slot)] = nil
    freeSlots.push(slot)
    connectionCount -= 1
    rearm()
  }

  /// The connection in `slot` next has something to do within `window` (nil: nothing).
  func schedule(slot: Int32, window: DeadlineWindow?) {
    queue.schedule(slot, window)
    if !firing { rearm() }
  }

  func recordFired(due: Instant, at now: Instant) { deadlines.record(due: due, firedAt: now) }

  private func rearm() { source?.arm(at: queue.nextWakeUp, loop: loop) }

  // MARK: - Events

  /// Reads one batch of datagrams from `socket` (one system call) and hands each to
  /// `body`, in order, with the time it arrived (the kernel's stamp, or now). Returns how
  /// many were read: fewer than a full batch means the socket is drained. A nested call (an
  /// app callback that runs the loop) reads nothing, and the loop, which is
  /// level-triggered, calls again later.
  func receiveBatch(from socket: ConnectedUDPSocket, _ body: (ArraySlice<UInt8>, Instant) -> Void)
    -> Int
  {
    guard !receiving else { return 0 }
    receiving = true
    defer { receiving = false }
    let room = datagramRoom
    let count = socket.receiveBatch(into: &received, stride: room, headers: receivedHeaders)
    guard count > 0 else { return 0 }
    let now = System.monotonicNow()
    let offset = System.realtimeOffset()
    for index in 0..<count {
      let length = min(tether_sys_batch_length(receivedHeaders, Int32(index)), room)
      let stamp = tether_sys_batch_arrival(receivedHeaders, Int32(index))
      let arrival = System.arrival(realtimeStamp: stamp, offset: offset, now: now)
      body(received[(index * room)..<(index * room + length)], arrival)
    }
    return count
  }

  /// The timer went off. Every connection whose deadline is due runs it, earliest first: its
  /// state changes and callbacks. Only then do their datagrams go out, so when many
  /// deadlines fall due together (a gateway whose uplink died cuts every session at once)
  /// the last callback does not wait for the earlier connections' sends. Between two connections'
  /// sends, a deadline that fell due meanwhile runs its callbacks first. Then the timer is
  /// armed once.
  func deadlinesDue() {
    source?.expired()
    firing = true
    earlyTaken = 0
    let budget = System.monotonicNow() + Self.batchBudget
    fireEveryDue(until: budget)
    var index = 0
    while index < batch.count {
      batch[index]?.finishFiring()
      index += 1
      fireEveryDue(until: budget)
    }
    // Emptied one at a time, keeping the storage (removeAll(keepingCapacity:) would add a
    // generic specialization to the Embedded library; releasing each connection is the work).
    while batch.popLast() != nil {}
    firing = false
    rearm()
  }

  /// How long one batch takes in deadlines that fall due while it runs. Not a limit on a
  /// real burst (10,000 sessions rejoining at once take a fraction of it): a bound so that a
  /// loop overloaded for good still returns to its sockets.
  static let batchBudget = Interval.seconds(1)

  /// How many connections whose window has started but not ended (heartbeats that may go a
  /// little late) one wake-up takes along. Coalescing saves wake-ups, but a wake-up that
  /// sends hundreds of heartbeats is one long slice of work, and on a busy machine the
  /// loop is preempted in the middle of it, with any threshold due meanwhile: 64 sends
  /// stay well under a millisecond.
  static let earlyPerWakeUp = 64

  /// Runs the callbacks of every connection whose window has ended, and of up to
  /// ``earlyPerWakeUp`` whose window has started, in order of their windows' ends, looking
  /// at the clock again when the queue seems done (callbacks take time too). A connection joins
  /// the batch unless its datagrams already wait in it.
  private func fireEveryDue(until budget: Instant) {
    var now = System.monotonicNow()
    while now < budget {
      let early = earlyTaken < Self.earlyPerWakeUp
      if let (slot, window) = queue.popStarted(by: now, early: early) {
        if window.end > now { earlyTaken += 1 }
        guard let connection = connections[Int(slot)] else { continue }
        if !connection.awaitingSends {
          connection.awaitingSends = true
          Self.add(connection, to: &batch)
        }
        connection.deadlineFired(window: window)
        continue
      }
      let later = System.monotonicNow()
      guard let next = queue.nextWakeUp, next <= later else { return }
      now = later
    }
  }

  /// Runs the deadlines already past their end, from a socket's read callback: so one that
  /// falls due while the loop works through many ready sockets in one iteration does not
  /// wait for all of them (the timer's callback would only run in the next iteration).
  func runOverdue(now: Instant) {
    guard !firing, let next = queue.nextWakeUp, next <= now else { return }
    deadlinesDue()
  }

  /// The netlink socket is readable.
  func netlinkReadable() { netlink?.drain(loop: loop) }

  /// A burst of address or route changes has settled: every connection of the loop looks at
  /// the route to its server. (Over a copy of the list: a callback may create or destroy
  /// connections; the copy keeps every connection of the list alive until it was asked.)
  func routesMayHaveChanged() {
    let listed = connections
    for connection in listed { connection?.routeMayHaveChanged() }
  }
}
