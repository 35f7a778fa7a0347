import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One channel engine: the core's session on a libev loop. It owns the UDP socket (an
/// `ev_io`); its deadlines live in its loop's shared queue behind one timer
/// (``LoopContext``). It turns the core's actions into datagrams and C callbacks.
///
/// A packet only writes a time in the core; after each read wake-up the engine tells the
/// loop its next deadline, and the loop's queue moves only if that instant changed.
final class Engine {
  let context: LoopContext
  var loop: OpaquePointer { context.loop }
  let owner: UInt
  var session: ChannelSession<BufferedRandom>
  var output = ChannelOutput()
  let callbacks: Callbacks
  /// Connected to ``server``; nil until the server's name has resolved.
  var socket: UDPSocket?
  /// The address the socket is connected to.
  var server: ServerAddress?
  /// What the app gave: an address, or a name looked up again while rejoins go unanswered
  /// (Engine+Server.swift).
  var endpoint: ServerEndpoint
  /// The name's look-up in flight, if any.
  var lookup: NameLookup?
  let io: UnsafeMutablePointer<ev_io>
  /// This engine's key in its loop's deadline queue.
  private(set) var slot: Int32 = -1
  /// NUL-terminated channel name of the current join, for callbacks.
  var channelCString: [UInt8] = [0]
  var stats = EngineStats()

  // Delivery (Engine+Delivery.swift).
  /// The next action of `output` to perform.
  var cursor = 0
  /// Datagrams before `cursor` were set aside while deadlines fired together.
  var sendsSetAside = false
  /// True while actions are being delivered: a call made from a callback appends its
  /// actions to the same queue, and they are delivered after those already queued.
  var dispatching = false
  /// Notifications queued before this index are not delivered: the app called
  /// tether_leave_channel from a callback after they were queued.
  var silencedBefore = 0

  // Lifetime (Engine+Lifetime.swift).
  /// How deeply calls into this engine are nested right now.
  var depth = 0
  /// Set by destroy: the engine is never entered again.
  var destroyed = false
  /// In its loop's batch of fired deadlines, with datagrams not sent yet.
  var awaitingSends = false

  init(
    context: LoopContext, session: consuming ChannelSession<BufferedRandom>,
    callbacks: Callbacks, endpoint: ServerEndpoint, socket: UDPSocket?
  ) {
    self.context = context
    self.endpoint = endpoint
    server = endpoint.address
    self.owner = System.currentThread()
    self.session = consume session
    self.callbacks = callbacks
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
      callbacks.log(
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
        if let error = session.receive(datagram: datagram, now: arrival, into: &output) {
          let (reason, detail) = describe(error)
          callbacks.log(.debug, reason, detail)
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
    guard let window = session.nextDeadlineWindow, window.end < arrival else { return }
    let now = self.now
    stats.deadlines.record(due: window.end, firedAt: now)
    context.recordFired(due: window.end, at: now)
    session.advance(to: arrival, into: &output)
  }

  /// The loop's timer found this engine's deadline window started: the session does what
  /// is due and the callbacks run; its datagrams wait for ``finishFiring()``.
  ///
  /// When the window has ended (any threshold due is among what must run now), the socket
  /// is read first: data that arrived before the deadline, but that a busy loop had not
  /// read yet, counts, so it never turns into a false INTERRUPTED. How late the deadline
  /// ran is then recorded; a heartbeat run early in its window, with others, is not a late
  /// deadline and costs no read. The engine takes its next window at once, so a deadline
  /// that falls due while the batch is still running fires in it.
  func deadlineFired(window: DeadlineWindow) {
    Engine.enter(self) { engine in
      let now = engine.now
      if now >= window.end { engine.receivePending(settingSendsAside: true) }
      if let due = engine.session.nextDeadlineWindow, due.start <= now {
        if now >= due.end {
          engine.stats.deadlines.record(due: due.end, firedAt: now)
          engine.context.recordFired(due: due.end, at: now)
        }
        engine.session.advance(to: now, into: &engine.output)
        engine.deliverNotifications()
      }
      if !engine.destroyed { engine.reschedule() }
    }
  }

  /// After every engine due in the batch ran its callbacks: the datagrams, then the next
  /// deadline.
  func finishFiring() {
    awaitingSends = false
    Engine.enter(self) { $0.flush() }
  }

  /// The loop's netlink watcher saw addresses or routes change: the session rejoins
  /// (CLIENT_IP_ADDRESS_CHANGED) only if the route to its server now leaves from another
  /// source address than its socket uses, or is gone (or that cannot be told).
  func routeMayHaveChanged() {
    Engine.enter(self) { engine in
      guard let socket = engine.socket, tether_sys_route_source_changed(socket.fd) != 0 else {
        return
      }
      engine.networkChanged(byUser: false)
    }
  }

  /// The device's addresses changed (netlink saw it, or the app said so): a fresh socket,
  /// so the kernel picks the source address again (the old one may be gone), then the
  /// session rejoins through it. A name is looked up again too: what it resolves to may
  /// depend on the network the device is on now.
  func networkChanged(byUser: Bool) {
    if let server {
      if let fresh = UDPSocket(connectedTo: server) {
        useSocket(fresh, server: server)
      } else {
        callbacks.log(
          .warning, "network change: no new socket, keeping the old one; errno",
          Int64(System.errno))
      }
    }
    lookUpName()
    session.networkChanged(byUser: byUser, now: now, into: &output)
    flush()
  }

  /// Switches to `replacement`, connected to `server` (a new endpoint, the same one after
  /// a network change, or the first address a name resolved to); nil closes the socket
  /// (a new name is being looked up).
  func useSocket(_ replacement: UDPSocket?, server: ServerAddress?) {
    if let socket {
      ev_io_stop(loop, io)
      socket.close()
    }
    socket = replacement
    self.server = server
    if let replacement { watch(replacement) }
  }

  /// Starts the read watcher on `socket`.
  private func watch(_ socket: UDPSocket) {
    tether_ev_io_init(io, engineReadable, socket.fd, Int32(EV_READ))
    tether_ev_set_data_io(io, handle)
    ev_io_start(loop, io)
  }

  /// Tells the loop when this engine next has something to do.
  func reschedule() {
    context.schedule(slot: slot, window: session.nextDeadlineWindow)
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
private func engineReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let data = tether_ev_data_io(io) else { return }
  Engine.enter(Unmanaged<Engine>.fromOpaque(data).takeUnretainedValue()) { $0.readable() }
}
