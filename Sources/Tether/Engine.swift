import CLibev
import CTetherABI
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One channel engine: the core's session on a libev loop. It owns the UDP socket (an
/// `ev_io`), one `ev_timer` kept at the session's earliest deadline, and the netlink
/// watcher; it turns the core's actions into datagrams and C callbacks.
///
/// The timer follows libev's "be smart about timeouts" (method 3): a packet only writes a
/// time in the core; the timer is moved only when the deadline comes *earlier* than the
/// one armed. When it fires early (the deadline moved later), the core has nothing to do
/// and the timer is armed again for the new deadline.
final class Engine {
  let loop: OpaquePointer
  let owner: UInt
  var session: ChannelSession<SystemRandomNumberGenerator>
  var output = ChannelOutput()
  let callbacks: Callbacks
  var socket: UDPSocket
  /// The endpoint the socket is connected to.
  var server: ServerAddress
  let io: UnsafeMutablePointer<ev_io>
  let timer: UnsafeMutablePointer<ev_timer>
  var armed: Instant?
  var netlink: NetlinkWatcher?
  /// NUL-terminated channel name of the current join, for callbacks.
  var channelCString: [UInt8] = [0]
  var receiveBuffer = [UInt8](repeating: 0, count: Packet.maximumSize + 1)
  /// True while actions are being delivered: a call made from a callback appends its
  /// actions to the same queue, and they are delivered after those already queued.
  var dispatching = false
  /// Set by destroy; the engine is released by the entry point that sees it first outside
  /// a dispatch (see `settle`).
  var destroyed = false
  var released = false

  init(
    loop: OpaquePointer, session: ChannelSession<SystemRandomNumberGenerator>,
    callbacks: Callbacks, socket: UDPSocket, server: ServerAddress
  ) {
    self.server = server
    self.loop = loop
    self.owner = System.currentThread()
    self.session = session
    self.callbacks = callbacks
    self.socket = socket
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
    timer = .allocate(capacity: 1)
    timer.initialize(to: ev_timer())
  }

  deinit {
    io.deinitialize(count: 1)
    io.deallocate()
    timer.deinitialize(count: 1)
    timer.deallocate()
  }

  /// Starts the watchers; `handle` is what their `data` points back to.
  func start(handle: UnsafeMutableRawPointer) {
    tether_ev_io_init(io, engineReadableCallback, socket.fd, Int32(EV_READ))
    tether_ev_set_data_io(io, handle)
    ev_io_start(loop, io)
    tether_ev_timer_init(timer, engineTimerFired, 0, 0)
    tether_ev_set_data_timer(timer, handle)
    netlink = NetlinkWatcher(loop: loop, handle: handle)
  }

  /// Stops every watcher and closes every descriptor; no callback comes after this.
  func shutDown() {
    destroyed = true
    ev_io_stop(loop, io)
    ev_timer_stop(loop, timer)
    socket.close()
    netlink?.stop(loop: loop)
    netlink = nil
  }

  var now: Instant { System.monotonicNow() }

  // MARK: - Events from the loop

  func readable() {
    let now = self.now
    for _ in 0..<64 {  // bounded, so one busy socket cannot starve the loop
      guard !destroyed, let count = socket.receive(into: &receiveBuffer) else { break }
      if let error = session.receive(datagram: receiveBuffer[0..<count], now: now, into: &output) {
        let (reason, detail) = describe(error)
        callbacks.log(.debug, reason, detail)
      }
      flush(rearming: false)
    }
    // The timer is re-armed once per wake-up, not per datagram: nothing waits on it until
    // this callback returns to the loop.
    if !destroyed && !dispatching { rearm() }
  }

  func timerFired() {
    armed = nil
    session.advance(to: now, into: &output)
    flush()
  }

  /// The device's addresses changed (netlink saw it, or the app said so): a fresh socket,
  /// so the kernel picks the source address again (the old one may be gone), then the
  /// session rejoins through it.
  func networkChanged(byUser: Bool) {
    if let fresh = UDPSocket(connectedTo: server) {
      replaceSocket(fresh, server: server)
    } else {
      callbacks.log(
        .warning, "network change: no new socket, keeping the old one; errno", Int64(System.errno))
    }
    session.networkChanged(byUser: byUser, now: now, into: &output)
    flush()
  }

  // MARK: - Delivering actions

  /// Delivers every queued action in order, then (unless told not to) re-arms the timer. A
  /// call made from a callback lands here too and returns at once: the outer loop delivers
  /// its actions.
  func flush(rearming: Bool = true) {
    guard !dispatching else { return }
    dispatching = true
    var index = 0
    while index < output.actions.count && !destroyed {
      let action = output.actions[index]
      index += 1
      switch action {
      case .send(let datagram):
        if !socket.send(output.bytes(of: datagram)) {
          callbacks.log(.debug, "send failed, errno", Int64(System.errno))
        }
      case .notify(let notification):
        deliver(notification)
      }
    }
    output.removeAll()
    dispatching = false
    if rearming && !destroyed { rearm() }
  }

  private func deliver(_ notification: ChannelNotification) {
    switch notification {
    case .joinChannelSuccess(_, let uid, let elapsed):
      callbacks.joinSuccess(channelCString, uid, elapsed, rejoin: false)
    case .rejoinChannelSuccess(_, let uid, let elapsed):
      callbacks.joinSuccess(channelCString, uid, elapsed, rejoin: true)
    case .joinAttempt(let status):
      let now = self.now
      callbacks.joinAttempt(
        status.attempt, status.nextAttemptAt.since(now).clampedMilliseconds,
        status.giveUpAt.since(now).clampedMilliseconds)
    default:
      callbacks.deliver(notification)
    }
  }

  /// Keeps the one timer at or before the session's earliest deadline.
  func rearm() {
    guard let deadline = session.nextDeadline else {
      ev_timer_stop(loop, timer)
      armed = nil
      return
    }
    if let armed, armed <= deadline, tether_ev_is_active_timer(timer) != 0 { return }
    ev_timer_stop(loop, timer)
    let now = self.now
    let delay = deadline > now ? Double(deadline.since(now).nanoseconds) / 1e9 : 0
    tether_ev_timer_set(timer, delay, 0)
    ev_timer_start(loop, timer)
    armed = deadline
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

// MARK: - libev callbacks: recover the engine from the watcher's data pointer

func engineHandle(_ data: UnsafeMutableRawPointer?) -> Unmanaged<Engine>? {
  data.map { Unmanaged<Engine>.fromOpaque($0) }
}

/// Releases the engine if it was destroyed during what just ran. Every entry point ends
/// with it, so an engine destroyed inside a callback is freed once the callback is over.
func settle(_ handle: Unmanaged<Engine>) {
  let engine = handle.takeUnretainedValue()
  guard engine.destroyed, !engine.dispatching, !engine.released else { return }
  engine.released = true
  handle.release()
}

private func engineTimerFired(
  _ loop: OpaquePointer?, _ timer: UnsafeMutablePointer<ev_timer>?, _ events: Int32
) {
  guard let timer, let handle = engineHandle(tether_ev_data_timer(timer)) else { return }
  handle.takeUnretainedValue().timerFired()
  settle(handle)
}

extension Engine {
  /// Switches to `replacement`, connected to `server` (a new endpoint, or the same one
  /// after a network change).
  func replaceSocket(_ replacement: UDPSocket, server: ServerAddress) {
    ev_io_stop(loop, io)
    socket.close()
    socket = replacement
    self.server = server
    tether_ev_io_init(io, engineReadableCallback, socket.fd, Int32(EV_READ))
    ev_io_start(loop, io)
  }
}

/// The read callback, for watchers set up after `start`.
let engineReadableCallback:
  @convention(c) (OpaquePointer?, UnsafeMutablePointer<ev_io>?, Int32) -> Void = {
    loop, io, events in
    guard let io, let handle = engineHandle(tether_ev_data_io(io)) else { return }
    handle.takeUnretainedValue().readable()
    settle(handle)
  }
