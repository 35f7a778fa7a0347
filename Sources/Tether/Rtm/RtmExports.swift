import CLibev
import CTetherABI
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The tether_rtm_* functions of Include/tether.h (documented there). Each checks its
// handle, thread and arguments, calls the core, delivers what it produced, and returns 0
// or the negative code the header lists. None traps on bad input.

private let notInitialized = TetherError.notInitialized.rawValue
private let invalidArgument = TetherError.invalidArgument.rawValue

/// The client behind a handle from tether_rtm_client_create.
private func client(_ pointer: OpaquePointer) -> RtmClient {
  Unmanaged<RtmClient>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
}

/// Runs `body` on a live client of this thread (entered: Connection+Lifetime.swift);
/// `dead` when the handle is NULL or destroyed, `foreign` from another thread.
private func withClient(
  _ pointer: OpaquePointer?, dead: Int32 = notInitialized,
  foreign: Int32 = TetherError.wrongThread.rawValue, _ body: (RtmClient) -> Int32
) -> Int32 {
  let (entered, refusal) = Connection.enter(handle: pointer, dead: dead, foreign: foreign)
  guard let entered else { return refusal }
  defer { entered.leave() }
  return body(unsafeDowncast(entered, to: RtmClient.self))
}

func defaultRtmConfig() -> tether_rtm_config {
  typealias Defaults = LoginConfig.Defaults
  var config = tether_rtm_config()
  config.size = UInt32(MemoryLayout<tether_rtm_config>.size)
  config.login_timeout_ms = Defaults.loginTimeout.clampedMilliseconds
  config.interrupted_after_ms = Defaults.interruptedAfter.clampedMilliseconds
  config.heartbeat_interval_ms = Defaults.heartbeatInterval.clampedMilliseconds
  config.retry_base_ms = RetryPolicy().base.clampedMilliseconds
  config.retry_cap_ms = RetryPolicy().cap.clampedMilliseconds
  return config
}

@_cdecl("tether_rtm_config_init")
public func exportedRtmConfigInit(_ config: UnsafeMutablePointer<tether_rtm_config>?) {
  config?.pointee = defaultRtmConfig()
}

@_cdecl("tether_rtm_handler_init")
public func exportedRtmHandlerInit(_ handler: UnsafeMutablePointer<tether_rtm_handler>?) {
  guard let handler else { return }
  handler.pointee = tether_rtm_handler()
  handler.pointee.size = UInt32(MemoryLayout<tether_rtm_handler>.size)
}

private func loginConfig(_ c: tether_rtm_config) throws(TetherError) -> LoginConfig {
  guard let appIDPointer = c.app_id else { throw .invalidAppID }
  var config = LoginConfig(
    appID: try AppID(validating: cStringBytes(appIDPointer, limit: AppID.maximumLength)))
  config.loginTimeout = .milliseconds(UInt64(c.login_timeout_ms))
  config.interruptedAfter = .milliseconds(UInt64(c.interrupted_after_ms))
  config.heartbeatInterval = .milliseconds(UInt64(c.heartbeat_interval_ms))
  config.retry = RetryPolicy(
    base: .milliseconds(UInt64(c.retry_base_ms)), cap: .milliseconds(UInt64(c.retry_cap_ms)))
  try config.validate()
  return config
}

@_cdecl("tether_rtm_client_create")
public func exportedRtmCreate(
  _ loop: OpaquePointer?, _ config: UnsafePointer<tether_rtm_config>?,
  _ handler: UnsafePointer<tether_rtm_handler>?, _ context: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
  guard let out else { return invalidArgument }
  out.pointee = nil
  guard let config,
    let given = readSized(config, minimum: minimumConfigSize, defaults: defaultRtmConfig())
  else { return invalidArgument }
  let session: LoginSession<BufferedRandom>
  do {
    session = try LoginSession(config: loginConfig(given), random: BufferedRandom())
  } catch {
    return error.rawValue
  }
  guard let endpoint = serverEndpoint(given.server) else { return invalidArgument }
  guard let callbacks = RtmCallbacks(handler, context: context) else { return invalidArgument }
  guard let loop = loop ?? tether_ev_default_loop() else { return TetherError.failed.rawValue }
  let socket: ConnectedUDPSocket?
  do {
    socket = try openSocket(
      for: endpoint, logger: callbacks.logger,
      refusal: "tether_rtm_client_create: no UDP socket, errno")
  } catch {
    return error.rawValue
  }
  return publish(
    RtmClient(
      context: LoopRegistry.context(of: loop), session: consume session, callbacks: callbacks,
      endpoint: endpoint, socket: socket),
    to: out)
}

@_cdecl("tether_rtm_client_destroy")
public func exportedRtmDestroy(_ pointer: OpaquePointer?) {
  guard let pointer else { return }
  let client = client(pointer)
  guard !client.destroyed else { return }
  guard System.isCurrentThread(client.owner) else {
    client.logger.log(.error, "tether_rtm_client_destroy called from another thread: ignored")
    return
  }
  Connection.enter(client) { $0.shutDown() }
}

@_cdecl("tether_rtm_login")
public func exportedRtmLogin(
  _ pointer: OpaquePointer?, _ token: UnsafePointer<CChar>?, _ userID: UnsafePointer<CChar>?
) -> Int32 {
  withClient(
    pointer, dead: -LoginError.notInitialized.rawValue, foreign: -LoginError.rejected.rawValue
  ) { client in
    // Malformed arguments become nil: the session checks TOO_OFTEN before them.
    let token = token.flatMap {
      try? Token(validating: cStringBytes($0, limit: Token.maximumLength))
    }
    let userID = userID.flatMap {
      try? UserID(validating: cStringBytes($0, limit: UserID.maximumLength))
    }
    do throws(LoginError) {
      try client.session.login(token: token, userID: userID, now: client.now, into: &client.output)
    } catch {
      return -error.rawValue
    }
    client.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_rtm_logout")
public func exportedRtmLogout(_ pointer: OpaquePointer?) -> Int32 {
  withClient(
    pointer, dead: -LogoutError.notInitialized.rawValue, foreign: -LogoutError.rejected.rawValue
  ) { client in
    // Only a logout that happens silences what was queued: a refused one changes nothing.
    let queued = client.output.actions.count
    do throws(LogoutError) {
      try client.session.logout(now: client.now, into: &client.output)
    } catch {
      return -error.rawValue
    }
    client.silenceUndelivered(before: queued)
    client.flush(rescheduling: true)
    return 0
  }
}

/// join or leave: the channel's name checked, then the session's rules.
@inline(never)  // one copy for both
private func changeChannel(
  _ pointer: OpaquePointer?, _ channel: UnsafePointer<CChar>?, join: Bool
) -> Int32 {
  withClient(pointer) { client in
    guard let channel else { return invalidArgument }
    do throws(TetherError) {
      let name = try ChannelName(
        validating: cStringBytes(channel, limit: ChannelName.maximumLength))
      if join {
        try client.session.joinChannel(name, now: client.now, into: &client.output)
      } else {
        try client.session.leaveChannel(name, now: client.now, into: &client.output)
      }
    } catch {
      return error.rawValue
    }
    client.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_rtm_join_channel")
public func exportedRtmJoinChannel(_ pointer: OpaquePointer?, _ channel: UnsafePointer<CChar>?)
  -> Int32
{
  changeChannel(pointer, channel, join: true)
}

@_cdecl("tether_rtm_leave_channel")
public func exportedRtmLeaveChannel(_ pointer: OpaquePointer?, _ channel: UnsafePointer<CChar>?)
  -> Int32
{
  changeChannel(pointer, channel, join: false)
}

@_cdecl("tether_rtm_renew_token")
public func exportedRtmRenewToken(_ pointer: OpaquePointer?, _ token: UnsafePointer<CChar>?)
  -> Int32
{
  withClient(pointer) { client in
    guard let token else { return invalidArgument }
    do throws(TetherError) {
      let token = try Token(validating: cStringBytes(token, limit: Token.maximumLength))
      try client.session.renewToken(token, now: client.now, into: &client.output)
    } catch {
      return error.rawValue
    }
    client.flush(rescheduling: true)
    return 0
  }
}

@_cdecl("tether_rtm_network_changed")
public func exportedRtmNetworkChanged(_ pointer: OpaquePointer?) -> Int32 {
  withClient(pointer) { client in
    client.networkChanged(byUser: true)
    return 0
  }
}

@_cdecl("tether_rtm_get_connection_state")
public func exportedRtmState(_ pointer: OpaquePointer?) -> tether_rtm_connection_state {
  var state = LoginState.disconnected
  _ = withClient(pointer) { client in
    state = client.session.state
    return 0
  }
  return tether_rtm_connection_state(UInt32(bitPattern: state.rawValue))
}

@_cdecl("tether_rtm_client_get_stats")
public func exportedRtmGetStats(
  _ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<tether_engine_stats>?
) -> Int32 {
  withClient(pointer) { client in
    guard let out, out.pointee.size >= 8 else { return invalidArgument }
    copyStats(client.publicStats, to: out)
    return 0
  }
}

// MARK: - Names

@_cdecl("tether_rtm_connection_state_name")
public func exportedRtmStateName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(LoginState(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_rtm_connection_change_reason_name")
public func exportedRtmReasonName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(LoginChangeReason(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_rtm_login_error_name")
public func exportedRtmLoginErrorName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(LoginError(rawValue: value)?.name ?? "UNKNOWN")
}

@_cdecl("tether_rtm_logout_error_name")
public func exportedRtmLogoutErrorName(_ value: Int32) -> UnsafePointer<CChar> {
  cString(LogoutError(rawValue: value)?.name ?? "UNKNOWN")
}
