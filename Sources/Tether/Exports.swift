import CLibev
import CTetherABI
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The functions of Include/tether.h (documented there). Each checks its handle, thread and
// arguments, calls the core, delivers what the core produced, and returns 0 or a negative
// TETHER_ERR_* code. None traps on bad input.

private let notInitialized = TetherError.notInitialized.rawValue
private let invalidArgument = TetherError.invalidArgument.rawValue

/// The engine behind a handle from tether_engine_create.
private func engine(_ pointer: OpaquePointer) -> Engine {
  Unmanaged<Engine>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
}

/// Runs `body` on a live engine of this thread (entered: Connection+Lifetime.swift).
private func withEngine(_ pointer: OpaquePointer?, _ body: (Engine) -> Int32) -> Int32 {
  let (entered, refusal) = Connection.enter(
    handle: pointer, dead: notInitialized, foreign: TetherError.wrongThread.rawValue)
  guard let entered else { return refusal }
  defer { entered.leave() }
  return body(unsafeDowncast(entered, to: Engine.self))
}

@_cdecl("tether_version")
public func exportedVersion() -> UInt32 {
  UInt32(TETHER_VERSION_MAJOR) << 16 | UInt32(TETHER_VERSION_MINOR) << 8
    | UInt32(TETHER_VERSION_PATCH)
}

func defaultEngineConfig() -> tether_engine_config {
  typealias Defaults = ChannelConfig.Defaults
  var config = tether_engine_config()
  config.size = UInt32(MemoryLayout<tether_engine_config>.size)
  config.interrupted_after_ms = Defaults.interruptedAfter.clampedMilliseconds
  config.lost_after_ms = Defaults.lostAfter.clampedMilliseconds
  config.remote_offline_after_ms = Defaults.remoteOfflineAfter.clampedMilliseconds
  config.give_up_after_ms = Defaults.giveUpAfter.clampedMilliseconds
  config.token_will_expire_before_ms = Defaults.tokenWillExpireBefore.clampedMilliseconds
  config.heartbeat_interval_ms = Defaults.heartbeatInterval.clampedMilliseconds
  config.retry_base_ms = RetryPolicy().base.clampedMilliseconds
  config.retry_cap_ms = RetryPolicy().cap.clampedMilliseconds
  return config
}

@_cdecl("tether_engine_config_init")
public func exportedConfigInit(_ config: UnsafeMutablePointer<tether_engine_config>?) {
  config?.pointee = defaultEngineConfig()
}

@_cdecl("tether_engine_handler_init")
public func exportedHandlerInit(_ handler: UnsafeMutablePointer<tether_engine_handler>?) {
  guard let handler else { return }
  handler.pointee = tether_engine_handler()
  handler.pointee.size = UInt32(MemoryLayout<tether_engine_handler>.size)
}

private func channelConfig(_ c: tether_engine_config) throws(TetherError) -> ChannelConfig {
  guard let appIDPointer = c.app_id else { throw .invalidAppID }
  var config = ChannelConfig(
    appID: try AppID(validating: cStringBytes(appIDPointer, limit: AppID.maximumLength)))
  config.interruptedAfter = .milliseconds(UInt64(c.interrupted_after_ms))
  config.lostAfter = .milliseconds(UInt64(c.lost_after_ms))
  config.remoteOfflineAfter = .milliseconds(UInt64(c.remote_offline_after_ms))
  config.giveUpAfter = .milliseconds(UInt64(c.give_up_after_ms))
  config.tokenWillExpireBefore = .milliseconds(UInt64(c.token_will_expire_before_ms))
  config.heartbeatInterval = .milliseconds(UInt64(c.heartbeat_interval_ms))
  config.retry = RetryPolicy(
    base: .milliseconds(UInt64(c.retry_base_ms)), cap: .milliseconds(UInt64(c.retry_cap_ms)))
  try config.validate()
  return config
}

func serverEndpoint(_ text: UnsafePointer<CChar>?) -> ServerEndpoint? {
  guard let text else { return nil }
  return ServerEndpoint(cStringBytes(text, limit: 300))
}

@_cdecl("tether_engine_create")
public func exportedCreate(
  _ loop: OpaquePointer?, _ config: UnsafePointer<tether_engine_config>?,
  _ handler: UnsafePointer<tether_engine_handler>?, _ context: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
  guard let out else { return invalidArgument }
  out.pointee = nil
  guard let config,
    let given = readSized(config, minimum: minimumConfigSize, defaults: defaultEngineConfig())
  else { return invalidArgument }
  let session: ChannelSession<BufferedRandom>
  do {
    session = try ChannelSession(config: channelConfig(given), random: BufferedRandom())
  } catch {
    return error.rawValue
  }
  guard let endpoint = serverEndpoint(given.server) else { return invalidArgument }
  guard let callbacks = Callbacks(handler, context: context) else { return invalidArgument }
  guard let loop = loop ?? tether_ev_default_loop() else { return TetherError.failed.rawValue }
  let socket: ConnectedUDPSocket?
  do {
    socket = try openSocket(
      for: endpoint, logger: callbacks.logger, refusal: "tether_engine_create: no UDP socket, errno"
    )
  } catch {
    return error.rawValue
  }
  return publish(
    Engine(
      context: LoopRegistry.context(of: loop), session: consume session, callbacks: callbacks,
      endpoint: endpoint, socket: socket),
    to: out)
}

@_cdecl("tether_engine_destroy")
public func exportedDestroy(_ pointer: OpaquePointer?) {
  guard let pointer else { return }
  let engine = engine(pointer)
  guard !engine.destroyed else { return }
  guard System.isCurrentThread(engine.owner) else {
    engine.logger.log(.error, "tether_engine_destroy called from another thread: ignored")
    return
  }
  Connection.enter(engine) { $0.shutDown() }
}

@_cdecl("tether_join_channel")
public func exportedJoin(
  _ pointer: OpaquePointer?, _ token: UnsafePointer<CChar>?, _ channel: UnsafePointer<CChar>?,
  _ uid: UInt32
) -> Int32 {
  withEngine(pointer) { engine in
    guard let channel else { return invalidArgument }
    do throws(TetherError) {
      let name = try ChannelName(
        validating: cStringBytes(channel, limit: ChannelName.maximumLength))
      let tokenBytes = token.map { cStringBytes($0, limit: Token.maximumLength) } ?? []
      let token = try Token(validating: tokenBytes)
      try engine.session.join(
        token: token, channel: name, uid: uid, now: engine.now, into: &engine.output)
    } catch {
      return error.rawValue
    }
    engine.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_leave_channel")
public func exportedLeave(_ pointer: OpaquePointer?) -> Int32 {
  withEngine(pointer) { engine in
    engine.silenceUndelivered()
    engine.session.leave(now: engine.now, into: &engine.output)
    engine.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_renew_token")
public func exportedRenewToken(_ pointer: OpaquePointer?, _ token: UnsafePointer<CChar>?) -> Int32 {
  withEngine(pointer) { engine in
    guard let token else { return invalidArgument }
    do throws(TetherError) {
      let token = try Token(validating: cStringBytes(token, limit: Token.maximumLength))
      try engine.session.renewToken(token, now: engine.now, into: &engine.output)
    } catch {
      return error.rawValue
    }
    engine.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_get_connection_state")
public func exportedState(_ pointer: OpaquePointer?) -> tether_connection_state {
  var state = ConnectionState.disconnected
  _ = withEngine(pointer) { engine in
    state = engine.session.state
    return 0
  }
  return tether_connection_state(UInt32(bitPattern: state.rawValue))
}

@_cdecl("tether_network_changed")
public func exportedNetworkChanged(_ pointer: OpaquePointer?) -> Int32 {
  withEngine(pointer) { engine in
    engine.networkChanged(byUser: true)
    return 0
  }
}

@_cdecl("tether_set_server")
public func exportedSetServer(_ pointer: OpaquePointer?, _ server: UnsafePointer<CChar>?) -> Int32 {
  withEngine(pointer) { engine in
    guard let endpoint = serverEndpoint(server) else { return invalidArgument }
    guard engine.setServer(endpoint) else {
      engine.logger.log(
        .error, "tether_set_server: no socket or look-up thread, errno", Int64(System.errno))
      return TetherError.failed.rawValue
    }
    return 0
  }
}

@_cdecl("tether_engine_get_stats")
public func exportedGetStats(
  _ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<tether_engine_stats>?
) -> Int32 {
  withEngine(pointer) { engine in
    // The oldest caller knows at least size and deadline_source.
    guard let out, out.pointee.size >= 8 else { return invalidArgument }
    copyStats(engine.publicStats, to: out)
    return 0
  }
}

/// Copies `stats` into `out` up to the size `out` declares (at least 8, checked by the
/// caller), keeping that size.
func copyStats(_ stats: tether_engine_stats, to out: UnsafeMutablePointer<tether_engine_stats>) {
  var stats = stats
  let count = min(Int(out.pointee.size), MemoryLayout<tether_engine_stats>.size)
  stats.size = out.pointee.size
  withUnsafeBytes(of: &stats) { source in
    if let start = source.baseAddress {
      UnsafeMutableRawPointer(out).copyMemory(from: start, byteCount: count)
    }
  }
}

// MARK: - Names

@_cdecl("tether_connection_state_name")
public func exportedStateName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(ConnectionState(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_connection_changed_reason_name")
public func exportedReasonName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(ConnectionChangedReason(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_user_offline_reason_name")
public func exportedOfflineReasonName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(UserOfflineReason(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_error_name")
public func exportedErrorName(_ value: Int32) -> UnsafePointer<CChar> {
  value == 0 ? cString("OK") : cString(TetherError(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_error_message")
public func exportedErrorMessage(_ value: Int32) -> UnsafePointer<CChar> {
  cString(value == 0 ? "No error." : TetherError(rawValue: value)?.message ?? "unknown error")
}

extension TetherError {
  /// One sentence for `tether_error_message`: what the code means to the caller.
  fileprivate var message: StaticString {
    switch self {
    case .failed: "The call failed."
    case .invalidArgument: "An argument is NULL or out of range."
    case .notReady: "Not allowed in the current state."
    case .notInitialized: "The handle is NULL or destroyed."
    case .joinChannelRejected: "Already joined or joining."
    case .invalidAppID: "Malformed app id."
    case .invalidChannelName: "Malformed channel name."
    case .tokenExpired: "The token has expired."
    case .invalidToken: "Malformed token."
    case .invalidUserID: "Invalid user id."
    case .wrongThread: "Not the loop's thread."
    }
  }
}
