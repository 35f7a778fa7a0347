// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc
import TetherEdge

/// The worker thread: it connects, then turns until the bus stops, making the bucket and a
/// watcher whenever a (re)connection asks for them and running the queued commands in order.
/// Its libnats calls block (up to the request timeout), never the caller's thread.
struct BusWorker {
  let core: BusCore
  let options: OpaquePointer

  var config: NatsFleetConfig { core.config }

  func run() {
    guard connect() else { return }
    var nextProblemCheck = BusTime.distantPast
    core.condition.lock()
    while !core.isStopping {
      let unconnected = core.isConnected ? nil : core.connection
      if core.isClosed {
        // libnats gave the connection up for good (a server that refused this edge twice
        // while reconnecting): a new one, as at start.
        core.condition.unlock()
        let connected = reconnect()
        core.condition.lock()
        guard connected else { break }
      } else if core.needsSetup && core.isConnected && BusTime.now() >= core.setupNotBefore {
        core.needsSetup = false
        core.condition.unlock()
        setUp()
        core.condition.lock()
      } else if core.isUp, let command = core.commands.popFirst() {
        core.condition.unlock()
        run(command)
        core.condition.lock()
      } else if let unconnected, BusTime.now() >= nextProblemCheck {
        // libnats retries in its own thread and says why only when asked.
        nextProblemCheck = BusTime.after(1)
        core.condition.unlock()
        let problem = connectionProblem(unconnected)
        core.condition.lock()
        if let problem { core.lastProblem = problem }
      } else {
        let retry = core.needsSetup && core.isConnected
        core.wait(until: retry ? core.setupNotBefore : BusTime.after(1))
      }
    }
    core.condition.unlock()
  }

  /// The reason of libnats's last failed attempt on `connection`, if any.
  private func connectionProblem(_ connection: OpaquePointer) -> String? {
    var text: UnsafePointer<CChar>?
    let status = natsConnection_GetLastError(connection, &text)
    guard status != NATS_OK else { return nil }
    let detail = text.map { String(cString: $0) } ?? ""
    return "fleet: connecting failed: \(statusText(status))"
      + (detail.isEmpty ? "" : " (\(detail))")
  }

  // MARK: - Connection

  /// The connection, its JetStream context and the subscription to `prefix.>`. Tried every
  /// reconnect wait until a server takes it (the last failure's reason, the server's own
  /// when it refused, is the bus's problem meanwhile); once made, libnats reconnects it.
  /// False when the bus stopped first.
  private func connect() -> Bool {
    var connection: OpaquePointer?
    var status = natsConnection_Connect(&connection, options)
    while status != NATS_OK {
      let problem = lastError("connecting", status)
      let stopping = core.update {
        core.lastProblem = problem
        return pause()
      }
      if stopping { return false }
      status = natsConnection_Connect(&connection, options)
    }
    guard let connection else { return false }
    var jsOptions = jsOptions()
    jsOptions_Init(&jsOptions)
    jsOptions.Wait = config.requestTimeout.milliseconds
    var js: OpaquePointer?
    _ = natsConnection_JetStream(&js, connection, &jsOptions)
    let subscription = subscribe(connection)
    let stopping = core.update {
      core.connection = connection
      core.jetStream = js
      core.subscription = subscription
      // Connected within the call: libnats calls no connected callback for it.
      core.isConnected = true
      core.needsSetup = true
      core.setupNotBefore = .distantPast
      return core.isStopping
    }
    return !stopping && js != nil
  }

  /// After libnats closed the connection on its own: its handles are freed (once its last
  /// callbacks ran), and a new connection is made after the reconnect wait. False when the
  /// bus stopped first (``NatsFleetBus/stop()`` frees the handles left in the core).
  private func reconnect() -> Bool {
    guard let handles = core.update({ takeClosedHandles() }) else { return false }
    if let kv = handles.kv { kvStore_Destroy(kv) }
    if let js = handles.jetStream { jsCtx_Destroy(js) }
    if let subscription = handles.subscription { natsSubscription_Destroy(subscription) }
    if let connection = handles.connection { natsConnection_Destroy(connection) }
    let stopping = core.update { pause() }
    return !stopping && connect()
  }

  private struct Handles {
    var kv, jetStream, subscription, connection: OpaquePointer?
  }

  /// The closed connection's handles, taken out of the core once the subscription's last
  /// callback ran (or a second passed); nil when the bus is stopping. Lock held.
  private func takeClosedHandles() -> Handles? {
    let deadline = BusTime.after(1)
    while core.subscription != nil && !core.isSubscriptionComplete && !core.isStopping
      && BusTime.now() < deadline
    {
      core.wait(until: deadline)
    }
    guard !core.isStopping else { return nil }
    let handles = Handles(
      kv: core.kv, jetStream: core.jetStream, subscription: core.subscription,
      connection: core.connection)
    core.kv = nil
    core.jetStream = nil
    core.subscription = nil
    core.connection = nil
    core.isClosed = false
    core.isSubscriptionComplete = false
    core.needsSetup = false
    return handles
  }

  /// Waits the reconnect wait, or until the bus stops (true). Lock held.
  private func pause() -> Bool {
    let until = BusTime.after(config.reconnectWait.seconds)
    while !core.isStopping && BusTime.now() < until { core.wait(until: until) }
    return core.isStopping
  }

  private func subscribe(_ connection: OpaquePointer) -> OpaquePointer? {
    let context = Unmanaged.passUnretained(core).toOpaque()
    var subscription: OpaquePointer?
    let status = natsConnection_Subscribe(
      &subscription, connection, config.subjectPrefix + ".>", onMessage, context)
    guard status == NATS_OK, let subscription else { return nil }
    natsSubscription_SetOnCompleteCB(subscription, onSubscriptionComplete, context)
    return subscription
  }

  // MARK: - Setup

  /// The bucket (made if missing) and a watcher on all its keys; then ``FleetInput/up``
  /// and the watcher handed to the watcher thread, whose snapshot follows the up. A failure
  /// is tried again after the reconnect wait while the connection lasts.
  private func setUp() {
    guard let js = core.update({ core.jetStream }) else { return }
    var kv: OpaquePointer?
    var watcher: OpaquePointer?
    var status = openBucket(js, &kv)
    if status == NATS_OK, let kv { status = kvStore_WatchAll(&watcher, kv, nil) }
    guard status == NATS_OK, let kv, let watcher else {
      let problem = lastError("opening the bucket '\(config.bucket)'", status)
      if let watcher { kvWatcher_Destroy(watcher) }
      if let kv { kvStore_Destroy(kv) }
      core.update {
        core.lastProblem = problem
        guard core.isConnected else { return }
        core.needsSetup = true
        core.setupNotBefore = BusTime.after(config.reconnectWait.seconds)
      }
      return
    }
    adopt(kv: kv, watcher: watcher)
  }

  /// What libnats says of this thread's last failure.
  private func lastError(_ doing: String, _ status: natsStatus) -> String {
    let detail = nats_GetLastError(nil).map { String(cString: $0) } ?? ""
    return "fleet: \(doing) failed: \(statusText(status))" + (detail.isEmpty ? "" : " (\(detail))")
  }

  /// Looks the bucket up, and makes it when it is missing: file storage (said explicitly:
  /// the fleet's state outlives a server restart), one value per key, no age limit.
  private func openBucket(_ js: OpaquePointer, _ kv: inout OpaquePointer?) -> natsStatus {
    let status = js_KeyValue(&kv, js, config.bucket)
    guard status == NATS_NOT_FOUND else { return status }
    return config.bucket.withCString { bucket in
      var bucketConfig = kvConfig()
      kvConfig_Init(&bucketConfig)
      bucketConfig.Bucket = bucket
      bucketConfig.History = 1
      bucketConfig.TTL = 0
      bucketConfig.StorageType = js_FileStorage
      return js_CreateKeyValue(&kv, js, &bucketConfig)
    }
  }

  /// Up with the new bucket handle and watcher, unless the connection was lost (or asked
  /// for another setup) meanwhile: then they are dropped and the next setup makes new ones.
  private func adopt(kv: OpaquePointer, watcher: OpaquePointer) {
    var oldKV: OpaquePointer? = kv
    var unadopted: OpaquePointer? = watcher
    core.update {
      guard core.isConnected, !core.needsSetup, !core.isStopping else { return }
      oldKV = core.kv
      core.kv = kv
      core.isUp = true
      core.period &+= 1
      core.post(.up)
      unadopted = core.pendingWatcher?.watcher
      core.pendingWatcher = (watcher, core.period)
    }
    if let unadopted { kvWatcher_Destroy(unadopted) }
    if let oldKV { kvStore_Destroy(oldKV) }
  }

  // MARK: - Commands

  private func run(_ command: FleetCommand) {
    switch command {
    case .publish(let subject, let payload):
      publish(subject: subject, payload: payload)
    case .write(let write):
      let (result, lost) = perform(write)
      core.update {
        core.post(.written(tag: write.tag, result))
        if lost {
          core.goDown()
          core.needsSetup = true
          core.setupNotBefore = .distantPast
        }
      }
    case .purgeDeletes:
      purgeDeletes()
    }
  }

  private func publish(subject: String, payload: [UInt8]) {
    guard let connection = core.update({ core.connection }) else { return }
    let fullSubject = config.subjectPrefix + "." + subject
    _ = payload.withUnsafeBytes { bytes in
      natsConnection_Publish(connection, fullSubject, bytes.baseAddress, Int32(bytes.count))
    }
  }
}
