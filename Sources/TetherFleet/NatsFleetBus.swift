// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc
import Synchronization
import TetherEdge

/// TetherEdge's ``FleetBus`` on NATS: one connection (reconnecting forever), a JetStream
/// key-value bucket with a watcher on all its keys, and a subscription to `prefix.>`.
///
/// Nothing here blocks the caller: ``init(config:)`` returns before the connection is made,
/// ``submit(_:)`` only queues. Two threads of the bus's own do the blocking work: the worker
/// connects, makes the bucket and the watcher at every (re)connection, and runs the
/// commands in order; the watcher thread turns `kvWatcher_Next` with a short timeout.
/// libnats's own threads (its callbacks) only queue. Every input goes through one locked
/// array and an eventfd (``descriptor``). The threads carry names (``threadNames``).
public final class NatsFleetBus: FleetBus {
  /// Buses made in this process so far: each bus's threads carry its number.
  private static let made = Atomic<Int>(0)

  /// The names its threads carry, as `ps -L` and `top -H` show them: `tether-bus-N` the
  /// worker, `tether-kv-N` the watcher, N this bus's number in the process from 1 (modulo
  /// 10,000: a name has 15 bytes). libnats's threads for this bus's connection start from
  /// the worker and carry its name; after ``stop()`` none of them is left.
  public let threadNames: [String]
  let core: BusCore
  private let options: OpaquePointer
  private var worker: BusThread?
  private var watcher: BusThread?
  private var isStopped = false

  /// Validates `config`, and starts the bus: the first ``FleetInput/up`` comes once a
  /// server answers (at once, or after any number of reconnection attempts).
  public init(config: NatsFleetConfig) throws(NatsFleetBusError) {
    do { try config.validate() } catch { throw .config(error) }
    core = try BusCore(config: config)
    let context = Unmanaged.passUnretained(core).toOpaque()
    options = try NatsOptions.make(config, context: context)
    let number = Self.made.wrappingAdd(1, ordering: .relaxed).newValue % 10_000
    threadNames = ["tether-bus-\(number)", "tether-kv-\(number)"]
    do {
      let core = self.core
      let options = self.options
      worker = try BusThread(named: threadNames[0]) {
        BusWorker(core: core, options: options).run()
      }
      watcher = try BusThread(named: threadNames[1]) { BusWatcher(core: core).run() }
    } catch {
      stop()
      throw error
    }
  }

  deinit { stop() }

  public var descriptor: Int32 { core.eventFD }

  public func takeInputs() -> [FleetInput] { core.takeInputs() }

  /// The last failure the bus met and retries (a connection refused by an option, such as
  /// an unreadable credentials file; a bucket it could not open or make), for the edge's
  /// log: the contract's inputs say only up and down. Nil while none happened.
  public var lastProblem: String? { core.update { core.lastProblem } }

  /// Messages dropped because the worker had ``CommandQueue/maxPublishes`` waiting (a
  /// server that stopped answering, before the bus noticed).
  public var droppedPublishes: UInt64 { core.update { core.commands.droppedPublishes } }

  /// Queues `commands` for the worker while the bus is up; while it is down, a write is
  /// answered ``FleetWriteResult/failed`` at once and a publish is dropped.
  public func submit(_ commands: [FleetCommand]) {
    core.update {
      guard !core.isStopping else { return }
      if core.isUp {
        core.commands.append(contentsOf: commands)
        return
      }
      for case .write(let write) in commands { core.post(.written(tag: write.tag, .failed)) }
    }
  }

  /// Stops the threads, closes the connection and frees what libnats holds; returns once
  /// all of it is done. Later calls do nothing. The process's libnats stays open
  /// (`nats_Close` is global: other buses may live on).
  public func stop() {
    guard !isStopped else { return }
    isStopped = true
    let connection = core.update {
      core.isStopping = true
      return core.connection
    }
    // Wakes a worker blocked in a request: it fails at once on a closed connection.
    if let connection { natsConnection_Close(connection) }
    watcher?.join()
    worker?.join()
    watcher = nil
    worker = nil
    tearDown()
  }

  /// After the threads: the handles the worker left, the connection (once its closed
  /// callback ran), the options.
  private func tearDown() {
    let (kv, js, subscription, connection) = core.update {
      (core.kv, core.jetStream, core.subscription, core.connection)
    }
    if let kv { kvStore_Destroy(kv) }
    if let js { jsCtx_Destroy(js) }
    if let subscription {
      natsSubscription_Unsubscribe(subscription)
      natsSubscription_Destroy(subscription)
    }
    if let connection {
      natsConnection_Close(connection)
      waitForCallbacks(subscription: subscription != nil)
      natsConnection_Destroy(connection)
    }
    natsOptions_Destroy(options)
  }

  /// libnats calls back on its own threads with a pointer to ``core``: the closed
  /// callback is the connection's last, the completion the subscription's last. Should they
  /// not come in time, ``core`` is kept alive for good (a late callback must find it).
  private func waitForCallbacks(subscription: Bool) {
    let deadline = BusTime.after(5)
    let done = core.update {
      while !(core.isClosed && (core.isSubscriptionComplete || !subscription)),
        BusTime.now() < deadline
      {
        core.wait(until: deadline)
      }
      return core.isClosed && (core.isSubscriptionComplete || !subscription)
    }
    if !done { _ = Unmanaged.passRetained(core) }
  }
}

/// A POSIX thread that can be joined (Foundation's Thread cannot), named (the threads it
/// starts inherit the name).
final class BusThread {
  private final class Body {
    let name: String
    let run: () -> Void
    init(_ name: String, _ run: @escaping () -> Void) { (self.name, self.run) = (name, run) }
  }

  private var thread = pthread_t()

  init(named name: String, _ body: @escaping () -> Void) throws(NatsFleetBusError) {
    let box = Unmanaged.passRetained(Body(name, body)).toOpaque()
    let result = pthread_create(
      &thread, nil,
      { argument in
        guard let argument else { return nil }
        let body = Unmanaged<Body>.fromOpaque(argument).takeRetainedValue()
        BusThread.name(body.name)
        body.run()
        return nil
      }, box)
    guard result == 0 else {
      Unmanaged<Body>.fromOpaque(box).release()
      throw .system("pthread_create", result)
    }
  }

  func join() { pthread_join(thread, nil) }

  /// Names the calling thread (what pthread_setname_np does; Swift's Glibc does not export
  /// it): its comm file. A name longer than 15 bytes is cut there; a failure leaves the
  /// thread its inherited name.
  private static func name(_ name: String) {
    let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard file >= 0 else { return }
    var bytes = Array(name.utf8)
    _ = write(file, &bytes, bytes.count)
    close(file)
  }
}
