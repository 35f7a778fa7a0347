// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// A channel engine or a login client on a libev loop: one type for both profiles. It owns
/// the UDP socket (an `ev_io`), the server's address or name (Connection+Server.swift), a
/// slot in the loop's deadline queue behind its one timer (``LoopContext``), the figures,
/// and its place in its life (``Lifecycle``: what may happen in which state, in one file).
/// Its session, the session's output and the app's callbacks are its ``Profile``'s; it
/// performs what the session produced (Connection+Delivery.swift).
///
/// A packet only writes a time in the core; after each read wake-up the connection tells
/// the loop its next deadline, and the loop's queue moves only if that instant changed.
final class Connection {
  let context: LoopContext
  var loop: OpaquePointer { context.loop }
  /// The thread of its loop, fixed at create: the one field another thread reads.
  let owner: UInt
  let logger: Logger
  /// The session and the app's callbacks.
  let profile: Profile
  /// Where it is in its life (Lifecycle.swift).
  var lifecycle = Lifecycle.created
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
  var stats: ConnectionCounters
  /// How far the session's output has been performed (Connection+Delivery.swift).
  var delivery = Delivery()
  /// In its loop's batch of fired deadlines, with datagrams not sent yet.
  var awaitingSends = false

  init(
    context: LoopContext, profile: Profile, logger: Logger, endpoint: ServerEndpoint,
    socket: ConnectedUDPSocket?, stats: ConnectionCounters
  ) {
    self.context = context
    self.profile = profile
    self.logger = logger
    self.endpoint = endpoint
    server = endpoint.address
    owner = System.currentThread()
    self.socket = socket
    self.stats = stats
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
  }

  deinit {
    stats.release()
    io.deinitialize(count: 1)
    io.deallocate()
  }

  /// What the watchers' data points back to: the app's handle.
  var handle: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// Joins the loop's deadline queue and starts the socket's watcher (or, for a name, its
  /// look-up): `created` to `live`; false (errno set) if the look-up could not start.
  func start() -> Bool {
    lifecycle = .live
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
    if lifecycle == .live { reschedule() }
  }

  /// Takes what waits on the socket, each datagram at the time it arrived: so a threshold
  /// counts from when the data reached the device, not from when a busy loop read it. At
  /// most 8 batches (64 datagrams), so one busy socket cannot starve the loop; a batch
  /// that is not full means the socket is drained.
  func receivePending(settingSendsAside: Bool) {
    for _ in 0..<8 {
      guard !isDestroyed, let socket else { return }
      let count = context.receiveBatch(from: socket) { datagram, arrival in
        guard !isDestroyed else { return }
        stats.datagramsIn &+= 1
        runDeadlinesDue(before: arrival)
        if let reason = profile.receive(datagram, at: arrival) {
          // What the session did before this datagram (a retry that fell due just now) is
          // told first, in order; and a drop is logged only while a session is under way
          // (2 … 4): after a leave or logout, even one made in those callbacks, the app
          // hears nothing but that call's own callbacks (tether.h).
          deliverNotifications()
          if !isDestroyed, (2...4).contains(profile.stateValue) { logger.log(.debug, reason) }
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
    guard let window = profile.deadlineWindow, window.end < arrival else { return }
    let now = self.now
    stats.recordDeadline(due: window.end, firedAt: now)
    context.recordFired(due: window.end, at: now)
    profile.advance(to: arrival)
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
      if let due = connection.profile.deadlineWindow, due.start <= now {
        if now >= due.end {
          connection.stats.recordDeadline(due: due.end, firedAt: now)
          connection.context.recordFired(due: due.end, at: now)
        }
        connection.profile.advance(to: now)
        connection.deliverNotifications()
      }
      if !connection.isDestroyed { connection.reschedule() }
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
    profile.networkChanged(byUser: byUser, now: now)
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
    context.schedule(slot: slot, window: profile.deadlineWindow)
  }

  /// Stops the watcher, sends what was already decided, leaves the loop and closes the
  /// socket; no callback comes after this (`destroyed`).
  func shutDown() {
    lifecycle = .destroyed
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
      if !isDestroyed { logger.log(.debug, "not sent: the server's name has no address yet") }
      return
    }
    if socket.send(bytes) {
      stats.datagramsOut &+= 1
    } else {
      stats.sendFailures &+= 1
      if !isDestroyed { logger.log(.debug, "send failed, errno", Int64(System.errno)) }
    }
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
