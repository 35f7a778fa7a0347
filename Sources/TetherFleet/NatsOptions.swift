// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc
import TetherEdge

/// libnats's connection options from a ``NatsFleetConfig``, and the connection callbacks
/// that carry its events to the ``BusCore`` (they only queue: they run on libnats's threads).
enum NatsOptions {
  /// Every timing set from the config, reconnection forever, a first connection retried
  /// in the background (an edge may start before its server).
  static func make(_ config: NatsFleetConfig, context: UnsafeMutableRawPointer)
    throws(NatsFleetBusError) -> OpaquePointer
  {
    var made: OpaquePointer?
    try check("natsOptions_Create", natsOptions_Create(&made))
    guard let options = made else { throw .nats("natsOptions_Create", "no options") }
    do {
      try configure(options, config, context: context)
    } catch {
      natsOptions_Destroy(options)
      throw error
    }
    return options
  }

  private static func configure(
    _ options: OpaquePointer, _ config: NatsFleetConfig, context: UnsafeMutableRawPointer
  ) throws(NatsFleetBusError) {
    try setServers(options, config.servers)
    try check("natsOptions_SetName", natsOptions_SetName(options, config.name))
    try check("natsOptions_SetNoRandomize", natsOptions_SetNoRandomize(options, true))
    if config.isSecure {
      try check("natsOptions_SetSecure", natsOptions_SetSecure(options, true))
    }
    if let caFile = config.tlsCAFile {
      try check(
        "natsOptions_LoadCATrustedCertificates",
        natsOptions_LoadCATrustedCertificates(options, caFile))
    }
    switch config.credentials {
    case .credsFile(let path):
      try check(
        "natsOptions_SetUserCredentialsFromFiles",
        natsOptions_SetUserCredentialsFromFiles(options, path, nil))
    case .nkey(let publicKey, let seedFile):
      try check(
        "natsOptions_SetNKeyFromSeed", natsOptions_SetNKeyFromSeed(options, publicKey, seedFile))
    case nil: break
    }
    try setTimings(options, config)
    try setCallbacks(options, context: context)
  }

  private static func setServers(_ options: OpaquePointer, _ servers: [String])
    throws(NatsFleetBusError)
  {
    let copies = servers.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    var pointers = copies.map { UnsafePointer<CChar>($0) }
    let status = pointers.withUnsafeMutableBufferPointer { buffer in
      natsOptions_SetServers(options, buffer.baseAddress, Int32(buffer.count))
    }
    try check("natsOptions_SetServers", status)
  }

  private static func setTimings(_ options: OpaquePointer, _ config: NatsFleetConfig)
    throws(NatsFleetBusError)
  {
    let request = config.requestTimeout.milliseconds
    try check(
      "natsOptions_SetPingInterval",
      natsOptions_SetPingInterval(options, config.pingInterval.milliseconds))
    try check(
      "natsOptions_SetMaxPingsOut",
      natsOptions_SetMaxPingsOut(options, Int32(clamping: config.maxPingsOut)))
    try check(
      "natsOptions_SetReconnectWait",
      natsOptions_SetReconnectWait(options, config.reconnectWait.milliseconds))
    // No jitter: the pause is the caller's (the edge spreads its own timings).
    try check("natsOptions_SetReconnectJitter", natsOptions_SetReconnectJitter(options, 0, 0))
    try check("natsOptions_SetMaxReconnect", natsOptions_SetMaxReconnect(options, -1))
    // A connection attempt to a frozen server, and a write to it, give up in time too.
    try check("natsOptions_SetTimeout", natsOptions_SetTimeout(options, request))
    try check("natsOptions_SetWriteDeadline", natsOptions_SetWriteDeadline(options, request))
    // A request in flight when the connection drops fails then, not at its timeout: the
    // worker is free for the reconnection's setup at once (its .up waits on nothing).
    try check(
      "natsOptions_SetFailRequestsOnDisconnect",
      natsOptions_SetFailRequestsOnDisconnect(options, true))
  }

  private static func setCallbacks(_ options: OpaquePointer, context: UnsafeMutableRawPointer)
    throws(NatsFleetBusError)
  {
    try check(
      "natsOptions_SetReconnectedCB", natsOptions_SetReconnectedCB(options, onConnected, context))
    try check(
      "natsOptions_SetDisconnectedCB",
      natsOptions_SetDisconnectedCB(options, onDisconnected, context))
    try check("natsOptions_SetClosedCB", natsOptions_SetClosedCB(options, onClosed, context))
  }

  static func check(_ call: String, _ status: natsStatus) throws(NatsFleetBusError) {
    guard status == NATS_OK else { throw .nats(call, statusText(status)) }
  }
}

func statusText(_ status: natsStatus) -> String {
  guard let text = natsStatus_GetText(status) else { return "status \(status.rawValue)" }
  return String(cString: text)
}

extension BusCore {
  /// The core behind a callback's closure (the bus keeps it alive while libnats may call).
  static func from(_ closure: UnsafeMutableRawPointer?) -> BusCore? {
    guard let closure else { return nil }
    return Unmanaged<BusCore>.fromOpaque(closure).takeUnretainedValue()
  }

  /// Connected (at last) or reconnected: the worker makes the bucket and a watcher.
  func connected() {
    update {
      isConnected = true
      needsSetup = true
      setupNotBefore = .distantPast
    }
  }
}

private let onConnected: natsConnectionHandler = { _, closure in
  BusCore.from(closure)?.connected()
}

private let onDisconnected: natsConnectionHandler = { _, closure in
  guard let core = BusCore.from(closure) else { return }
  core.update {
    core.isConnected = false
    core.goDown()
  }
}

private let onClosed: natsConnectionHandler = { _, closure in
  guard let core = BusCore.from(closure) else { return }
  core.update {
    core.isConnected = false
    core.goDown()
    core.isClosed = true
  }
}

/// A message on `prefix.>`: queued with the prefix taken off, while the bus is up.
let onMessage: natsMsgHandler = { _, _, message, closure in
  defer { natsMsg_Destroy(message) }
  guard let core = BusCore.from(closure), let message,
    let subjectPointer = natsMsg_GetSubject(message)
  else { return }
  let subject = String(cString: subjectPointer)
  let prefix = core.config.subjectPrefix + "."
  guard subject.hasPrefix(prefix) else { return }
  var payload: [UInt8] = []
  let count = Int(natsMsg_GetDataLength(message))
  if count > 0, let data = natsMsg_GetData(message) {
    payload = data.withMemoryRebound(to: UInt8.self, capacity: count) {
      Array(UnsafeBufferPointer(start: $0, count: count))
    }
  }
  core.update {
    guard core.isUp else { return }
    core.post(.message(subject: String(subject.dropFirst(prefix.count)), payload: payload))
  }
}

/// The subscription's handler will not run again.
let onSubscriptionComplete: natsOnCompleteCB = { closure in
  guard let core = BusCore.from(closure) else { return }
  core.update { core.isSubscriptionComplete = true }
}
