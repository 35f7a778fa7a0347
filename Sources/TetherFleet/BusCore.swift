// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc
import TetherEdge

/// What the caller's thread, the worker, the watcher and libnats's callbacks share, behind
/// one lock (``condition``): every field is read and written with it held. The bus owns it;
/// libnats's callbacks reach it through an unretained pointer that the bus keeps valid until
/// the connection has closed (``NatsFleetBus/stop()``).
final class BusCore: @unchecked Sendable {
  let config: NatsFleetConfig
  let condition = BusCondition()
  /// Readable while ``inputs`` holds something (an eventfd: a counter, cleared by a read).
  let eventFD: Int32

  /// The inputs for ``NatsFleetBus/takeInputs()``, in the order they happened.
  var inputs: [FleetInput] = []
  /// Commands for the worker, in the caller's order (only while ``isUp``).
  var commands = CommandQueue()
  /// libnats says the connection is established (its connected and reconnected callbacks).
  var isConnected = false
  /// ``FleetInput/up`` was the last of up and down that the edge heard.
  var isUp = false
  /// The bucket and a new watcher are wanted (after a connection, or a write that timed out).
  var needsSetup = false
  /// No setup before this (a failed one waits the reconnect wait).
  var setupNotBefore = BusTime.distantPast
  /// Counts the up periods: a watcher's entries are posted only in the period that made it.
  var period: UInt64 = 0
  /// A watcher the worker made, for the watcher thread to adopt, and its period.
  var pendingWatcher: (watcher: OpaquePointer, period: UInt64)?
  var isStopping = false
  /// The last failure the worker met (a refused connection, a bucket it could not open).
  var lastProblem: String?
  /// The connection, once the worker made it (``NatsFleetBus/stop()`` closes it early).
  var connection: OpaquePointer?
  /// The worker's handles, destroyed by ``NatsFleetBus/stop()`` after the worker ended.
  var jetStream: OpaquePointer?
  var kv: OpaquePointer?
  var subscription: OpaquePointer?
  /// libnats's closed callback ran: no connection callback comes after it.
  var isClosed = false
  /// The subscription's handler has returned for the last time.
  var isSubscriptionComplete = false

  init(config: NatsFleetConfig) throws(NatsFleetBusError) {
    self.config = config
    let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    guard fd >= 0 else { throw .system("eventfd", errno) }
    eventFD = fd
  }

  deinit { close(eventFD) }

  /// Queues `input` and makes the descriptor readable. Lock held.
  func post(_ input: FleetInput) {
    inputs.append(input)
    var one: UInt64 = 1
    _ = write(eventFD, &one, 8)
  }

  /// The bus is lost: the edge hears ``FleetInput/down`` once, the watcher's entries stop
  /// counting, and every queued write fails now rather than after its timeout. Lock held.
  func goDown() {
    if isUp {
      isUp = false
      period &+= 1
      post(.down)
    }
    failQueuedCommands()
  }

  /// Answers the queued writes `.failed` and drops the rest (a publish is lost while the
  /// bus is down; a purge is asked again by the edge's next sweep). Lock held.
  func failQueuedCommands() {
    for write in commands.removeAll() { post(.written(tag: write.tag, .failed)) }
  }

  /// The inputs so far; clears the descriptor.
  func takeInputs() -> [FleetInput] {
    condition.lock()
    defer { condition.unlock() }
    var count: UInt64 = 0
    _ = read(eventFD, &count, 8)
    let taken = inputs
    inputs = []
    return taken
  }

  /// Runs `body` with the lock held and wakes the threads waiting on a change.
  func update<T>(_ body: () -> T) -> T {
    condition.lock()
    defer {
      condition.broadcast()
      condition.unlock()
    }
    return body()
  }

  /// Waits with the lock held until `deadline` or a change (the lock is released meanwhile).
  func wait(until deadline: BusTime) {
    condition.wait(until: deadline)
  }
}

/// Why a ``NatsFleetBus`` could not be made.
public enum NatsFleetBusError: Error, Equatable, CustomStringConvertible {
  case config(FleetConfigError)
  /// A system call failed (its name, errno).
  case system(String, Int32)
  /// libnats refused an option (the call, its status text).
  case nats(String, String)

  public var description: String {
    switch self {
    case .config(let error): error.description
    case .system(let call, let code): "fleet: \(call) failed: \(String(cString: strerror(code)))"
    case .nats(let call, let text): "fleet: \(call) failed: \(text)"
    }
  }
}
