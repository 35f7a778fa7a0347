// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// A channel engine or a login client on a libev loop: one type for both profiles. It uses
/// a UDP socket (its loop's shared one, or its own: ``DatagramSocket``), the server's
/// address or name (Connection+Server.swift), a
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
  var socket: DatagramSocket?
  /// The interface its own socket is bound to (NUL-terminated); nil: the loop's shared one.
  let device: [UInt8]?
  /// The keys its datagrams come back under on a shared socket.
  var routes = RouteKeys()
  /// The address the socket is connected to.
  var server: ServerAddress?
  /// What the app gave: an address, or a name looked up again while attempts go
  /// unanswered (Connection+Server.swift).
  var endpoint: ServerEndpoint
  /// The name's look-up in flight, if any.
  var lookup: NameLookup?
  /// This connection's key in its loop's deadline queue.
  private(set) var slot: Int32 = -1
  var stats: ConnectionCounters
  /// How far the session's output has been performed (Connection+Delivery.swift).
  var delivery = Delivery()
  /// In its loop's batch of fired deadlines, with datagrams not sent yet.
  var awaitingSends = false

  init(
    context: LoopContext, profile: Profile, logger: Logger, endpoint: ServerEndpoint,
    device: [UInt8]?, stats: ConnectionCounters
  ) {
    self.context = context
    self.profile = profile
    self.logger = logger
    self.endpoint = endpoint
    self.device = device
    owner = System.currentThread()
    self.stats = stats
  }

  deinit {
    stats.release()
  }

  /// What the watchers' data points back to: the app's handle.
  var handle: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// Joins the loop's deadline queue and takes its socket (or, for a name, starts its
  /// look-up): `created` to `live`; false (errno set, logged) if no socket could be had or
  /// the look-up could not start.
  func start() -> Bool {
    lifecycle = .live
    slot = context.add(self)
    if let address = endpoint.address, !useSocket(to: address) {
      logger.log(.error, "create: no UDP socket, errno", Int64(System.errno))
      return false
    }
    if context.sourceKind == .evTimer {
      logger.log(
        .warning, "deadlines: no timerfd, one ev_timer per loop instead (~1 ms late); errno",
        Int64(context.timerfdErrno))
    }
    return socket != nil || lookUpName()
  }

  var now: Instant { System.monotonicNow() }

  // MARK: - Events from the loop

  /// One datagram its socket's read found for it, with the time it arrived. What the
  /// session did before it (a retry that fell due just now) is told first, in order. While
  /// its loop fires deadlines (the socket read for a threshold), its datagrams wait for the
  /// batch's sends; otherwise they go now, and the loop learns its next deadline.
  func take(_ datagram: ArraySlice<UInt8>, at arrival: Instant) {
    Connection.enter(self) { connection in
      connection.stats.datagramsIn &+= 1
      connection.runDeadlinesDue(before: arrival)
      if let reason = connection.profile.receive(datagram, at: arrival) {
        // A drop is logged only while a session is under way (2 … 4): after a leave or
        // logout, even one made in those callbacks, the app hears nothing but that call's
        // own callbacks (tether.h).
        connection.deliverNotifications()
        if !connection.isDestroyed, (2...4).contains(connection.profile.stateValue) {
          connection.logger.log(.debug, reason)
        }
      }
      if connection.context.isFiring {
        connection.deliverNotifications()
        connection.context.joinBatch(connection)
      } else {
        connection.flush(rescheduling: true)
      }
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
      // Unless a read that began after the window's end emptied the socket already.
      if now >= window.end, let socket = connection.socket, socket.drainedAt < window.end {
        connection.context.read(socket)
      }
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
  /// address than its socket uses, or is gone (or that cannot be told). A socket is looked
  /// at once, by its first connection asked, which also gives it a fresh descriptor; the
  /// others on it only react. Sockets whose route did not change move nothing.
  func routeMayHaveChanged() {
    Connection.enter(self) { connection in
      guard let socket = connection.socket else { return }
      if socket.routeChange == 0 {
        socket.routeChange = tether_sys_route_source_changed(socket.fd) != 0 ? 2 : 1
      }
      if socket.routeChange == 2 {
        socket.routeChange = 3
        connection.networkChanged(byUser: false)
      } else if socket.routeChange == 3 {
        connection.reactToNetworkChange(byUser: false)
      }
    }
  }

  /// The device's addresses changed (netlink saw it, or the app said so): a fresh
  /// descriptor for its socket, so the kernel picks the source address again (the old one
  /// may be gone), then the session reacts through it. A shared socket moves with every
  /// session on it; the others are not told (no callback, no rejoin): the edge follows
  /// them to the new port by path validation (docs/PROTOCOL.md §12.11), as after a NAT
  /// rebinding.
  func networkChanged(byUser: Bool) {
    if let socket, !socket.reopen() {
      logger.log(
        .warning, "network change: no new socket, keeping the old one; errno", Int64(System.errno))
    }
    reactToNetworkChange(byUser: byUser)
  }

  /// The session's side of a network change, its socket already fresh. A name is looked
  /// up again too: what it resolves to may depend on the network the device is on now.
  func reactToNetworkChange(byUser: Bool) {
    lookUpName()
    profile.networkChanged(byUser: byUser, now: now)
    flush(rescheduling: true)
  }

  /// Takes the socket to `address` (nil: none, while a new name is looked up) in place of
  /// the one it has; false (errno set), nothing changed, if no socket could be had.
  @discardableResult
  func useSocket(to address: ServerAddress?) -> Bool {
    var fresh: DatagramSocket?
    if let address {
      fresh = context.acquireSocket(to: address, device: device, for: slot)
      guard fresh != nil else { return false }
    }
    switchSocket(to: fresh, server: address)
    return true
  }

  /// Switches to `fresh` (acquired for this connection already), connected to `server`,
  /// letting go of the socket it had.
  func switchSocket(to fresh: DatagramSocket?, server: ServerAddress?) {
    if let old = socket, old === fresh {
      // The same shared socket again: counted once, keeping the keys its answers come under.
      old.members -= 1
      if old.members == 1 { old.soleSlot = slot }
    } else if let old = socket {
      context.releaseSocket(old, slot: slot, keys: routes)
      routes = RouteKeys()
    }
    socket = fresh
    self.server = server
  }

  /// Tells the loop when this connection next has something to do.
  func reschedule() {
    context.schedule(slot: slot, window: profile.deadlineWindow)
  }

  /// Stops the watcher, sends what was already decided, leaves the loop and closes the
  /// socket; no callback comes after this (`destroyed`).
  func shutDown() {
    lifecycle = .destroyed
    sendUndelivered()
    switchSocket(to: nil, server: server)
    context.remove(slot: slot)
    LoopRegistry.release(context)
    lookup?.cancel(loop: loop)
    lookup = nil
  }

  /// Sends one datagram of the session's output; counts and logs a failure.
  func send(_ bytes: ArraySlice<UInt8>) {
    // No log from inside destroy, which promises no callback (sendUndelivered).
    guard let socket else {
      stats.sendFailures &+= 1
      if !isDestroyed { logger.log(.debug, "not sent: the server's name has no address yet") }
      return
    }
    socket.learn(bytes, slot: slot, keys: &routes)
    context.send(bytes, on: socket, from: self)
  }

  /// The kernel refused one of its datagrams (counted in ``stats`` already).
  func logSendFailure(errno: Int32) {
    // No log from inside destroy, which promises no callback (sendUndelivered).
    if !isDestroyed { logger.log(.debug, "send failed, errno", Int64(errno)) }
  }
}
