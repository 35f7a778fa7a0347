// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The functions of the channel profile (tether_engine_* and the channel calls of
// Include/tether.h, documented there): what is the channel's own, the rest handed to the
// halves both profiles share (Exports.swift).

func defaultEngineConfig() -> tether_engine_config {
  typealias Defaults = ChannelConfig.Defaults
  var config = tether_engine_config(
    interruptedAfter: Defaults.interruptedAfter, heartbeatInterval: Defaults.heartbeatInterval)
  config.lost_after_ms = Defaults.lostAfter.clampedMilliseconds
  config.remote_offline_after_ms = Defaults.remoteOfflineAfter.clampedMilliseconds
  config.give_up_after_ms = Defaults.giveUpAfter.clampedMilliseconds
  config.token_will_expire_before_ms = Defaults.tokenWillExpireBefore.clampedMilliseconds
  return config
}

@c @implementation
public func tether_engine_config_init(_ config: UnsafeMutablePointer<tether_engine_config>?) {
  config?.pointee = defaultEngineConfig()
}

@c @implementation
public func tether_engine_handler_init(_ handler: UnsafeMutablePointer<tether_engine_handler>?) {
  initializeHandler(handler)
}

private func channelConfig(_ c: tether_engine_config) throws(TetherError) -> ChannelConfig {
  var config: ChannelConfig = try c.linkConfig()
  config.lostAfter = .milliseconds(UInt64(c.lost_after_ms))
  config.remoteOfflineAfter = .milliseconds(UInt64(c.remote_offline_after_ms))
  config.giveUpAfter = .milliseconds(UInt64(c.give_up_after_ms))
  config.tokenWillExpireBefore = .milliseconds(UInt64(c.token_will_expire_before_ms))
  try config.validate()
  return config
}

@c @implementation
public func tether_engine_create(
  _ loop: OpaquePointer?, _ config: UnsafePointer<tether_engine_config>?,
  _ handler: UnsafePointer<tether_engine_handler>?, _ context: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<UnsafeMutablePointer<tether_engine>?>?
) -> Int32 {
  create(
    ChannelProfile.self, loop: loop, config: config, defaults: defaultEngineConfig(),
    handler: handler, context: context, out: out
  ) { given throws(TetherError) in
    try ChannelSession(config: channelConfig(given), random: BufferedRandom())
  }
}

@c @implementation
public func tether_engine_destroy(_ engine: UnsafeMutablePointer<tether_engine>?) -> Int32 {
  Connection.destroy(handle: engine)
}

@c @implementation
public func tether_join_channel(
  _ engine: UnsafeMutablePointer<tether_engine>?, _ token: UnsafePointer<CChar>?,
  _ channel: UnsafePointer<CChar>?,
  _ uid: UInt32
) -> Int32 {
  withProfile(engine) { (connection, profile: ChannelProfile) in
    do throws(TetherError) {
      let name = try channelName(channel)
      let tokenBytes = token.map { cStringBytes($0, limit: Token.maximumLength) } ?? []
      let token = try Token(validating: tokenBytes)
      try profile.session.join(
        token: token, channel: name, uid: uid, now: connection.now, into: &profile.output)
    } catch {
      return error.rawValue
    }
    connection.flush(rescheduling: true)
    return 0
  }
}

@c @implementation
public func tether_leave_channel(_ engine: UnsafeMutablePointer<tether_engine>?) -> Int32 {
  withProfile(engine) { (connection, profile: ChannelProfile) in
    connection.silenceUndelivered()
    profile.session.leave(now: connection.now, into: &profile.output)
    connection.flush(rescheduling: true)
    return 0
  }
}

@c @implementation
public func tether_renew_token(
  _ engine: UnsafeMutablePointer<tether_engine>?, _ token: UnsafePointer<CChar>?
) -> Int32 {
  renewToken(engine, token)
}

@c @implementation
public func tether_get_connection_state(_ engine: UnsafePointer<tether_engine>?)
  -> tether_connection_state
{
  tether_connection_state(stateValue(engine))
}

@c @implementation
public func tether_network_changed(_ engine: UnsafeMutablePointer<tether_engine>?) -> Int32 {
  networkChanged(engine)
}

@c @implementation
public func tether_set_server(
  _ engine: UnsafeMutablePointer<tether_engine>?, _ server: UnsafePointer<CChar>?
) -> Int32 {
  withProfile(engine) { (connection, _: Profile) in
    guard let endpoint = serverEndpoint(server) else {
      return TetherError.invalidArgument.rawValue
    }
    guard connection.setServer(endpoint) else {
      connection.logger.log(
        .error, "tether_set_server: no socket or look-up thread, errno", Int64(System.errno))
      return TetherError.failed.rawValue
    }
    return 0
  }
}

@c @implementation
public func tether_engine_get_stats(
  _ engine: UnsafePointer<tether_engine>?, _ out: UnsafeMutablePointer<tether_connection_stats>?
) -> Int32 {
  copyStats(engine, to: out)
}

@c @implementation
public func tether_engine_reset_lateness(_ engine: UnsafeMutablePointer<tether_engine>?) -> Int32 {
  resetLateness(engine)
}

// MARK: - Names

@c @implementation
public func tether_connection_state_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(ConnectionState(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_connection_changed_reason_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(ConnectionChangedReason(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_user_offline_reason_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(UserOfflineReason(rawValue: value)?.name ?? "UNKNOWN")
}
