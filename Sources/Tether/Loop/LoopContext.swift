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
/// netlink socket), and one UDP socket per server address its connections talk to
/// (``DatagramSocket``: shared, read here and handed out by session), beside those of the
/// connections that asked for their own. It gathers the datagrams its connections send while
/// it fires deadlines or reads a socket, and sends them with one sendmmsg per batch.
final class LoopContext: Linked {
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
  /// Datagrams gathered for one sendmmsg, all for `sendsFD`, and who sent each.
  private let sends = UnsafeMutablePointer<tether_sys_sends>.allocate(capacity: 1)
  private var sendsFD: Int32 = -1
  private var sendOwners: [Connection?] = []
  /// Scopes under way that gather datagrams rather than send each at once.
  private var gathering = 0
  /// While a socket is read, the timer is armed once at the end, not per session.
  private var holdingTimer = false
  /// The shared sockets, one per server address, linked through ``DatagramSocket/nextInList``.
  private var firstShared: DatagramSocket?
  /// Datagrams on a shared socket that no session's key named: dropped.
  var unclaimed: UInt64 = 0
  /// Datagrams the kernel dropped on the loop's sockets, their receive buffers full.
  var overflowed: UInt64 = 0
  /// The next context of ``LoopRegistry``'s list (under the registry's lock).
  var nextInList: LoopContext?
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
    sends.initialize(to: tether_sys_sends())
    sendOwners.reserveCapacity(Int(TETHER_SYS_BATCH))
  }

  deinit {
    receivedHeaders.deinitialize(count: 1)
    receivedHeaders.deallocate()
    sends.deinitialize(count: 1)
    sends.deallocate()
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
    if !firing && !holdingTimer { rearm() }
  }

  func recordFired(due: Instant, at now: Instant) { deadlines.record(due: due, firedAt: now) }

  private func rearm() { source?.arm(at: queue.nextWakeUp, loop: loop) }

  // MARK: - Events

  /// Reads one batch of datagrams from `socket` (one system call) and hands each to
  /// `body`, in order, with the time it arrived (the kernel's stamp, or now). Returns how
  /// many were read: fewer than a full batch means the socket is drained. A nested call (an
  /// app callback that runs the loop) reads nothing, and the loop, which is
  /// level-triggered, calls again later.
  private func receiveBatch(
    from socket: DatagramSocket, _ body: (ArraySlice<UInt8>, Instant) -> Void
  ) -> Int {
    guard !receiving else { return 0 }
    receiving = true
    defer { receiving = false }
    let room = datagramRoom
    let count = socket.receiveBatch(into: &received, stride: room, headers: receivedHeaders)
    guard count > 0 else { return 0 }
    let now = System.monotonicNow()
    let offset = System.realtimeOffset()
    let drops = tether_sys_batch_drops(receivedHeaders, Int32(count - 1))
    if drops != socket.kernelDrops, drops != 0 {
      overflowed &+= UInt64(drops &- socket.kernelDrops)
      socket.kernelDrops = drops
    }
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
    gathering += 1
    defer { endGathering() }
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

  /// A connection that took a datagram while the batch fires (read for another one's
  /// deadline) sends it with the batch, after every callback.
  func joinBatch(_ connection: Connection) {
    guard firing, !connection.awaitingSends else { return }
    connection.awaitingSends = true
    Self.add(connection, to: &batch)
  }

  var isFiring: Bool { firing }

  /// The netlink socket is readable.
  func netlinkReadable() { netlink?.drain(loop: loop) }

  /// A burst of address or route changes has settled: each connection asks about its
  /// socket's route, which each socket looks up once, however many share it. (Over a copy
  /// of the list: a callback may create or destroy connections; the copy keeps every
  /// connection of the list alive until it was asked.)
  func routesMayHaveChanged() {
    let listed = connections
    for connection in listed { connection?.routeMayHaveChanged() }
    for connection in listed { connection?.socket?.routeChange = 0 }
  }
}

// MARK: - Sockets

extension LoopContext {
  /// The socket to `server` for the connection in `slot`: the loop's shared one (made if it
  /// has none yet), or, with a `device`, a new one of its own bound to it. Nil (errno set)
  /// if a socket was needed and none could be made.
  func acquireSocket(to server: ServerAddress, device: [UInt8]?, for slot: Int32)
    -> DatagramSocket?
  {
    var socket = device == nil ? shared(to: server) : nil
    if socket == nil {
      guard let made = DatagramSocket.open(to: server, device: device, context: self) else {
        return nil
      }
      made.watch()
      if made.isShared {
        made.nextInList = firstShared
        firstShared = made
      }
      socket = made
    }
    guard let socket else { return nil }
    socket.members += 1
    socket.soleSlot = socket.members == 1 ? slot : -1
    // Three keys a session in steady state (an INIT's nonce or two, its session id).
    if socket.isShared { socket.routes.reserve(3 * socket.members) }
    return socket
  }

  /// The connection in `slot`, whose keys are `keys`, leaves `socket`: its keys are
  /// forgotten, and the socket is closed with its last connection.
  func releaseSocket(_ socket: DatagramSocket, slot: Int32, keys: RouteKeys) {
    keys.visit { socket.routes.remove($0, of: slot) }
    socket.members -= 1
    if socket.members == 1 {
      socket.soleSlot = firstSlot(on: socket, except: slot) ?? -1
    } else if socket.members == 0 {
      socket.close()
      socket.unlink(from: &firstShared)
    }
  }

  /// The loop's shared socket to `server`, if it has one.
  private func shared(to server: ServerAddress) -> DatagramSocket? {
    var next = firstShared
    while let socket = next {
      if socket.server.same(as: server) { return socket }
      next = socket.nextInList
    }
    return nil
  }

  /// The slot of a connection on `socket` other than `except` (a walk of the loop's
  /// connections, when a shared socket is down to one).
  private func firstSlot(on socket: DatagramSocket, except: Int32) -> Int32? {
    for index in 0..<connections.count where Int32(index) != except {
      if let connection = connections[index], connection.socket === socket {
        return Int32(index)
      }
    }
    return nil
  }

  /// `socket` is readable: the deadlines overdue run, then every datagram waiting goes to
  /// its session, and the timer is armed once.
  func readable(_ socket: DatagramSocket) {
    runOverdue(now: System.monotonicNow())
    read(socket)
    rearm()
  }

  /// Takes what waits on `socket`, each datagram at the time it arrived: so a threshold
  /// counts from when the data reached the device, not from when a busy loop read it. At
  /// most 8 batches (64 datagrams), so one busy socket cannot starve the loop; a batch
  /// that is not full means the socket is drained. A shared socket's datagram goes to the
  /// session its key names (none: dropped and counted, ``unclaimed``).
  func read(_ socket: DatagramSocket) {
    guard !receiving else { return }  // a callback that runs the loop: read later
    let began = System.monotonicNow()
    let held = holdingTimer
    holdingTimer = !firing
    gathering += 1
    defer {
      holdingTimer = held
      endGathering()
    }
    // A callback may have let go of the socket (its last connection destroyed).
    for _ in 0..<8 where socket.members > 0 {
      let count = receiveBatch(from: socket) { datagram, arrival in
        guard let slot = socket.claimant(of: datagram), Int(slot) < connections.count,
          let connection = connections[Int(slot)]
        else {
          unclaimed &+= 1
          return
        }
        connection.take(datagram, at: arrival)
      }
      if count < Int(TETHER_SYS_BATCH) {
        socket.drainedAt = began
        return
      }
    }
  }

  // MARK: Sends

  /// Sends `bytes` for `connection` on `socket`: at once, or, while the loop fires
  /// deadlines or reads a socket, with the others gathered for the same socket in one
  /// sendmmsg when the scope ends (or the batch is full).
  func send(_ bytes: ArraySlice<UInt8>, on socket: DatagramSocket, from connection: Connection) {
    guard gathering > 0, bytes.count <= Int(TETHER_SYS_DATAGRAM) else {
      if socket.send(bytes) {
        connection.stats.datagramsOut &+= 1
      } else {
        connection.stats.sendFailures &+= 1
        connection.logSendFailure(errno: System.errno)
      }
      return
    }
    if sendsFD != socket.fd || sends.pointee.count == TETHER_SYS_BATCH { sendGathered() }
    sendsFD = socket.fd
    bytes.withUnsafeBytes { tether_sys_sends_add(sends, $0.baseAddress, $0.count) }
    Self.add(connection, to: &sendOwners)
  }

  /// Sends what is gathered if it is for `fd` (which is about to close).
  func sendWaiting(on fd: Int32) {
    if sendsFD == fd { sendGathered() }
  }

  private func endGathering() {
    gathering -= 1
    if gathering == 0 { sendGathered() }
  }

  /// Sends the gathered datagrams, as many per call as the kernel takes; each counted to
  /// the connection that sent it.
  /// A refusal is logged once the batch is emptied (the app's on_log may call in again),
  /// once per batch: the last one, to its connection.
  private func sendGathered() {
    let count = Int(sends.pointee.count)
    var first = 0
    var refused: (Connection, Int32)?
    while first < count {
      let sent = Int(tether_sys_sends_flush(sendsFD, sends, Int32(first)))
      if sent > 0 {
        for index in first..<(first + sent) { sendOwners[index]?.stats.datagramsOut &+= 1 }
        first += sent
      } else {
        if let owner = sendOwners[first] {
          owner.stats.sendFailures &+= 1
          refused = (owner, System.errno)
        }
        first += 1
      }
    }
    sends.pointee.count = 0
    sendsFD = -1
    while sendOwners.popLast() != nil {}
    if let (owner, errno) = refused { owner.logSendFailure(errno: errno) }
  }
}
