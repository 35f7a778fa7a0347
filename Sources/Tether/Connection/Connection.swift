import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// What a channel engine and a login client share on a libev loop: the UDP socket (an
/// `ev_io`), the server's address or name (Connection+Server.swift), a slot in the loop's
/// deadline queue behind its one timer (``LoopContext``), the lifetime rules under
/// re-entrant calls (Connection+Lifetime.swift), and the figures. The session itself, its
/// output and the app's callbacks are the profile's: ``SessionConnection`` and its
/// subclasses ``Engine`` and ``RtmClient`` supply them through the hooks at the end.
///
/// A packet only writes a time in the core; after each read wake-up the connection tells
/// the loop its next deadline, and the loop's queue moves only if that instant changed.
class Connection {
  let context: LoopContext
  var loop: OpaquePointer { context.loop }
  let owner: UInt
  let logger: Logger
  /// Connected to ``server``; nil until the server's name has resolved.
  var socket: ConnectedUDPSocket?
  /// The address the socket is connected to.
  var server: ServerAddress?
  /// What the app gave: an address, or a name looked up again while attempts go
  /// unanswered (Connection+Server.swift).
  var endpoint: ServerEndpoint
  /// The name's look-up in flight, if any.
  var lookup: NameLookup?
  let io: UnsafeMutablePointer<ev_io>
  /// This connection's key in its loop's deadline queue.
  private(set) var slot: Int32 = -1
  var stats = EngineStats()

  // Delivery (SessionConnection.swift).
  /// The next action of the session's output to perform.
  var cursor = 0
  /// Datagrams before `cursor` were set aside while deadlines fired together.
  var sendsSetAside = false
  /// True while actions are being delivered: a call made from a callback appends its
  /// actions to the same queue, and they are delivered after those already queued.
  var dispatching = false
  /// Notifications queued before this index are not delivered: the app left (or logged
  /// out) from a callback after they were queued.
  var silencedBefore = 0

  // Lifetime (Connection+Lifetime.swift).
  /// How deeply calls into this connection are nested right now.
  var depth = 0
  /// Set by destroy: the connection is never entered again.
  var destroyed = false
  /// In its loop's batch of fired deadlines, with datagrams not sent yet.
  var awaitingSends = false

  init(context: LoopContext, logger: Logger, endpoint: ServerEndpoint, socket: ConnectedUDPSocket?)
  {
    self.context = context
    self.logger = logger
    self.endpoint = endpoint
    server = endpoint.address
    owner = System.currentThread()
    self.socket = socket
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
  }

  deinit {
    io.deinitialize(count: 1)
    io.deallocate()
  }

  /// What the watchers' data points back to: the app's handle.
  var handle: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// Joins the loop's deadline queue and starts the socket's watcher (or, for a name, its
  /// look-up); false (errno set) if the look-up could not start.
  func start() -> Bool {
    slot = context.add(self)
    if let socket { watch(socket) }
    if context.sourceKind == .evTimer {
      logger.log(
        .warning, "deadlines: no timerfd, one ev_timer per loop instead (~1 ms late); errno",
        Int64(context.timerfdErrno))
    }
    return socket != nil || lookUpName()
  }

  var now: Instant { System.monotonicNow() }

  // MARK: - Events from the loop

  func readable() {
    context.runOverdue(now: now)
    receivePending(settingSendsAside: false)
    // The deadline is looked at once per wake-up, not per datagram: nothing waits on it
    // until this callback returns to the loop.
    if !destroyed && !dispatching { reschedule() }
  }

  /// Takes what waits on the socket, each datagram at the time it arrived: so a threshold
  /// counts from when the data reached the device, not from when a busy loop read it. At
  /// most 8 batches (64 datagrams), so one busy socket cannot starve the loop; a batch
  /// that is not full means the socket is drained.
  func receivePending(settingSendsAside: Bool) {
    for _ in 0..<8 {
      guard !destroyed, let socket else { return }
      let count = context.receiveBatch(from: socket) { datagram, arrival in
        guard !destroyed else { return }
        stats.datagramsIn &+= 1
        runDeadlinesDue(before: arrival)
        if let error = receiveDatagram(datagram, at: arrival) {
          let (reason, detail) = describe(error)
          logger.log(.debug, reason, detail)
        }
        if settingSendsAside { deliverNotifications() } else { flush(rescheduling: false) }
      }
      if count < Int(TETHER_SYS_BATCH) { return }
    }
  }

  /// A deadline that fell due before `arrival` runs before the datagram is taken, as it
  /// would have on time: a loop that ran late must not let an answer that came after the
  /// threshold erase the silence before it (no INTERRUPTED). Data that arrived in time is
  /// taken before the deadline, as always.
  private func runDeadlinesDue(before arrival: Instant) {
    guard let window = sessionDeadlineWindow, window.end < arrival else { return }
    let now = self.now
    stats.deadlines.record(due: window.end, firedAt: now)
    context.recordFired(due: window.end, at: now)
    advanceSession(to: arrival)
  }

  /// The loop's timer found this connection's deadline window started: the session does
  /// what is due and the callbacks run; its datagrams wait for ``finishFiring()``.
  ///
  /// When the window has ended (any threshold due is among what must run now), the socket
  /// is read first: data that arrived before the deadline, but that a busy loop had not
  /// read yet, counts, so it never turns into a false INTERRUPTED. How late the deadline
  /// ran is then recorded; a heartbeat run early in its window, with others, is not a late
  /// deadline and costs no read. The connection takes its next window at once, so a
  /// deadline that falls due while the batch is still running fires in it.
  func deadlineFired(window: DeadlineWindow) {
    Connection.enter(self) { connection in
      let now = connection.now
      if now >= window.end { connection.receivePending(settingSendsAside: true) }
      if let due = connection.sessionDeadlineWindow, due.start <= now {
        if now >= due.end {
          connection.stats.deadlines.record(due: due.end, firedAt: now)
          connection.context.recordFired(due: due.end, at: now)
        }
        connection.advanceSession(to: now)
        connection.deliverNotifications()
      }
      if !connection.destroyed { connection.reschedule() }
    }
  }

  /// After every connection due in the batch ran its callbacks: the datagrams, then the
  /// next deadline.
  func finishFiring() {
    awaitingSends = false
    Connection.enter(self) { $0.flush(rescheduling: true) }
  }

  /// The loop's netlink watcher saw addresses or routes change: the session reacts (as
  /// its profile says) only if the route to its server now leaves from another source
  /// address than its socket uses, or is gone (or that cannot be told).
  func routeMayHaveChanged() {
    Connection.enter(self) { connection in
      guard let socket = connection.socket, tether_sys_route_source_changed(socket.fd) != 0
      else { return }
      connection.networkChanged(byUser: false)
    }
  }

  /// The device's addresses changed (netlink saw it, or the app said so): a fresh socket,
  /// so the kernel picks the source address again (the old one may be gone), then the
  /// session reacts through it. A name is looked up again too: what it resolves to may
  /// depend on the network the device is on now.
  func networkChanged(byUser: Bool) {
    if let server {
      if let fresh = ConnectedUDPSocket(connectedTo: server) {
        useSocket(fresh, server: server)
      } else {
        logger.log(
          .warning, "network change: no new socket, keeping the old one; errno",
          Int64(System.errno))
      }
    }
    lookUpName()
    sessionNetworkChanged(byUser: byUser)
    flush(rescheduling: true)
  }

  /// Switches to `replacement`, connected to `server` (a new endpoint, the same one after
  /// a network change, or the first address a name resolved to); nil closes the socket
  /// (a new name is being looked up).
  func useSocket(_ replacement: ConnectedUDPSocket?, server: ServerAddress?) {
    if let socket {
      ev_io_stop(loop, io)
      socket.close()
    }
    socket = replacement
    self.server = server
    if let replacement { watch(replacement) }
  }

  /// Starts the read watcher on `socket`.
  private func watch(_ socket: ConnectedUDPSocket) {
    tether_ev_io_init(io, connectionReadable, socket.fd, Int32(EV_READ))
    tether_ev_set_data_io(io, handle)
    ev_io_start(loop, io)
  }

  /// Tells the loop when this connection next has something to do.
  func reschedule() {
    context.schedule(slot: slot, window: sessionDeadlineWindow)
  }

  /// Stops the watcher, sends what was already decided, leaves the loop and closes the
  /// socket; no callback comes after this.
  func shutDown() {
    destroyed = true
    ev_io_stop(loop, io)
    sendUndelivered()
    context.remove(slot: slot)
    LoopRegistry.release(context)
    lookup?.cancel(loop: loop)
    lookup = nil
    socket?.close()
  }

  /// Sends one datagram of the session's output; counts and logs a failure.
  func send(_ bytes: ArraySlice<UInt8>) {
    // No log from inside destroy, which promises no callback (sendUndelivered).
    guard let socket else {
      stats.sendFailures &+= 1
      if !destroyed { logger.log(.debug, "not sent: the server's name has no address yet") }
      return
    }
    if socket.send(bytes) {
      stats.datagramsOut &+= 1
    } else {
      stats.sendFailures &+= 1
      if !destroyed { logger.log(.debug, "send failed, errno", Int64(System.errno)) }
    }
  }

  // MARK: - Delivery, for both profiles

  // The session's output is generic over its notifications; the loops over it are not: they
  // reach its actions by index through the hooks below, so they exist once in the library
  // rather than once per profile.

  /// Performs every queued action in order (datagrams set aside first), then, unless told
  /// not to, tells the loop the next deadline. A call made from a callback lands here too
  /// and returns at once: the outer loop performs its actions.
  final func flush(rescheduling: Bool) {
    guard !dispatching else { return }
    dispatching = true
    sendSetAside()
    while cursor < actionCount && !destroyed {
      let index = cursor
      cursor += 1
      if let datagram = action(at: index, delivering: index >= silencedBefore) { send(datagram) }
    }
    if !destroyed { clearOutput() }
    dispatching = false
    if rescheduling && !destroyed { reschedule() }
  }

  /// Delivers the queued notifications and sets the datagrams aside.
  final func deliverNotifications() {
    guard !dispatching else { return }
    dispatching = true
    while cursor < actionCount && !destroyed {
      let index = cursor
      cursor += 1
      if action(at: index, delivering: index >= silencedBefore) != nil { sendsSetAside = true }
    }
    dispatching = false
  }

  /// At destroy: the datagrams the session had already produced still go out (a LEAVE
  /// or LOGOUT from a call just before, in the same callback); the notifications not yet
  /// delivered never are.
  final func sendUndelivered() {
    sendSetAside()
    while cursor < actionCount {
      if let datagram = action(at: cursor, delivering: false) { send(datagram) }
      cursor += 1
    }
    clearOutput()
  }

  /// The app left (or logged out) from inside a callback: what was queued before and is
  /// not delivered yet never is (tether.h: nothing after leave or logout until the next
  /// join or login but their own callbacks). Its datagrams still go out. `end`: how many
  /// actions were queued before the call, when the call has already added its own.
  final func silenceUndelivered(before end: Int? = nil) {
    if dispatching { silencedBefore = end ?? actionCount }
  }

  private func sendSetAside() {
    guard sendsSetAside else { return }
    sendsSetAside = false
    for index in 0..<cursor {
      if let datagram = action(at: index, delivering: false) { send(datagram) }
    }
  }

  private func clearOutput() {
    removeActions()
    cursor = 0
    sendsSetAside = false
    silencedBefore = 0
  }

  // MARK: - Hooks: each profile's session (overridden)

  /// Hands one datagram to the session; its decoding error, if any.
  func receiveDatagram(_ datagram: ArraySlice<UInt8>, at arrival: Instant) -> WireError? { nil }
  /// The session's next deadline window.
  var sessionDeadlineWindow: DeadlineWindow? { nil }
  /// Runs what is due in the session by `now`.
  func advanceSession(to now: Instant) {}
  /// Datagrams that did not decode, datagrams of another session, and attempts sent.
  var sessionCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) { (0, 0, 0) }
  /// How many actions the session's output holds.
  var actionCount: Int { 0 }
  /// Action `index` of the session's output: the bytes to send if it is a datagram; nil
  /// for a notification, which is delivered (the app's callback called) if `delivering`.
  /// (The loops above pass false for a notification queued before the app left since:
  /// ``silencedBefore``.)
  func action(at index: Int, delivering: Bool) -> ArraySlice<UInt8>? { nil }
  /// Empties the session's output, keeping its storage.
  func removeActions() {}
  /// The device's network changed (after the fresh socket).
  func sessionNetworkChanged(byUser: Bool) {}
  /// The app switched to another endpoint (after the new socket or look-up).
  func sessionEndpointChanged() {}
  /// A looked-up name gave a new address (after the new socket).
  func sessionEndpointResolved() {}
}

/// What to log for a datagram that did not decode: a fixed text and, for some errors, the
/// offending byte.
private func describe(_ error: WireError) -> (StaticString, Int64?) {
  switch error {
  case .truncated: ("dropped a datagram: truncated", nil)
  case .oversized: ("dropped a datagram: oversized", nil)
  case .badMagic: ("dropped a datagram: bad magic", nil)
  case .unsupportedVersion(let v): ("dropped a datagram: unsupported version", Int64(v))
  case .unknownType(let t): ("dropped a datagram: unknown type", Int64(t))
  case .invalidField: ("dropped a datagram: invalid field", nil)
  case .trailingBytes: ("dropped a datagram: trailing bytes", nil)
  }
}

/// The UDP socket's read callback.
private func connectionReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let data = tether_ev_data_io(io) else { return }
  Connection.enter(Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()) {
    $0.readable()
  }
}
