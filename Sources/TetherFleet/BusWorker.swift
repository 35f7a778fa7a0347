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
      if core.needsSetup && core.isConnected && BusTime.now() >= core.setupNotBefore {
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

  /// The connection (made now, or later in libnats's background), its JetStream context
  /// and the subscription to `prefix.>`. False when the bus stopped first.
  private func connect() -> Bool {
    var connection: OpaquePointer?
    var status = natsConnection_Connect(&connection, options)
    // With retry on a failed connect, only a refused option fails here (a bad credentials
    // file): tried again each reconnect wait, as a lost server is.
    while status != NATS_OK && status != NATS_NOT_YET_CONNECTED {
      let problem = lastError("connecting", status)
      let stopping = core.update {
        core.lastProblem = problem
        core.wait(until: BusTime.after(config.reconnectWait.seconds))
        return core.isStopping
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
      if status == NATS_OK {
        core.isConnected = true
        core.needsSetup = true
      }
      return core.isStopping
    }
    return !stopping && js != nil
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
