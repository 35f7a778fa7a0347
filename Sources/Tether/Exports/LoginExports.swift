// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The functions of the login profile (tether_rtm_* of Include/tether.h, documented there):
// what is the login's own, the rest handed to the halves both profiles share
// (Exports.swift).

func defaultRtmConfig() -> tether_rtm_config {
  typealias Defaults = LoginConfig.Defaults
  var config = tether_rtm_config(
    interruptedAfter: Defaults.interruptedAfter, heartbeatInterval: Defaults.heartbeatInterval)
  config.login_timeout_ms = Defaults.loginTimeout.clampedMilliseconds
  return config
}

@c @implementation
public func tether_rtm_config_init(_ config: UnsafeMutablePointer<tether_rtm_config>?) {
  config?.pointee = defaultRtmConfig()
}

@c @implementation
public func tether_rtm_handler_init(_ handler: UnsafeMutablePointer<tether_rtm_handler>?) {
  initializeHandler(handler)
}

private func loginConfig(_ c: tether_rtm_config) throws(TetherError) -> LoginConfig {
  var config: LoginConfig = try c.linkConfig()
  config.loginTimeout = .milliseconds(UInt64(c.login_timeout_ms))
  try config.validate()
  return config
}

@c @implementation
public func tether_rtm_client_create(
  _ loop: OpaquePointer?, _ config: UnsafePointer<tether_rtm_config>?,
  _ handler: UnsafePointer<tether_rtm_handler>?, _ context: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<UnsafeMutablePointer<tether_rtm_client>?>?
) -> Int32 {
  create(
    LoginProfile.self, loop: loop, config: config, defaults: defaultRtmConfig(),
    handler: handler, context: context, out: out
  ) { given throws(TetherError) in
    try LoginSession(config: loginConfig(given), random: BufferedRandom())
  }
}

@c @implementation
public func tether_rtm_client_destroy(_ client: UnsafeMutablePointer<tether_rtm_client>?) -> Int32 {
  Connection.destroy(handle: client)
}

@c @implementation
public func tether_rtm_login(
  _ client: UnsafeMutablePointer<tether_rtm_client>?, _ token: UnsafePointer<CChar>?,
  _ userID: UnsafePointer<CChar>?
) -> Int32 {
  withProfile(client) { (connection, profile: LoginProfile) in
    // Malformed arguments become nil: the session checks TOO_OFTEN before them.
    let token = token.flatMap {
      try? Token(validating: cStringBytes($0, limit: Token.maximumLength))
    }
    let userID = userID.flatMap {
      try? UserID(validating: cStringBytes($0, limit: UserID.maximumLength))
    }
    do throws(TetherError) {
      try profile.session.login(
        token: token, userID: userID, now: connection.now, into: &profile.output)
    } catch {
      return error.rawValue
    }
    connection.flush(rescheduling: true)
    return 0
  }
}

@c @implementation
public func tether_rtm_logout(_ client: UnsafeMutablePointer<tether_rtm_client>?) -> Int32 {
  withProfile(client) { (connection, profile: LoginProfile) in
    // Only a logout that happens silences what was queued: a refused one changes nothing.
    let queued = profile.output.actionCount
    do throws(TetherError) {
      try profile.session.logout(now: connection.now, into: &profile.output)
    } catch {
      return error.rawValue
    }
    connection.silenceUndelivered(before: queued)
    connection.flush(rescheduling: true)
    return 0
  }
}

/// join or leave: the channel's name checked, then the session's rules.
@inline(never)  // one copy for join and leave
private func changeChannel(
  _ client: UnsafeRawPointer?, _ channel: UnsafePointer<CChar>?, join: Bool
) -> Int32 {
  withProfile(client) { (connection, profile: LoginProfile) in
    do throws(TetherError) {
      let name = try channelName(channel)
      if join {
        try profile.session.joinChannel(name, now: connection.now, into: &profile.output)
      } else {
        try profile.session.leaveChannel(name, now: connection.now, into: &profile.output)
      }
    } catch {
      return error.rawValue
    }
    connection.flush(rescheduling: true)
    return 0
  }
}

@c @implementation
public func tether_rtm_join_channel(
  _ client: UnsafeMutablePointer<tether_rtm_client>?, _ channel: UnsafePointer<CChar>?
)
  -> Int32
{
  changeChannel(client, channel, join: true)
}

@c @implementation
public func tether_rtm_leave_channel(
  _ client: UnsafeMutablePointer<tether_rtm_client>?, _ channel: UnsafePointer<CChar>?
)
  -> Int32
{
  changeChannel(client, channel, join: false)
}

@c @implementation
public func tether_rtm_renew_token(
  _ client: UnsafeMutablePointer<tether_rtm_client>?, _ token: UnsafePointer<CChar>?
)
  -> Int32
{
  renewToken(client, token)
}

@c @implementation
public func tether_rtm_network_changed(_ client: UnsafeMutablePointer<tether_rtm_client>?) -> Int32
{
  networkChanged(client)
}

@c @implementation
public func tether_rtm_get_connection_state(_ client: UnsafePointer<tether_rtm_client>?)
  -> tether_rtm_connection_state
{
  tether_rtm_connection_state(stateValue(client))
}

@c @implementation
public func tether_rtm_client_get_stats(
  _ client: UnsafePointer<tether_rtm_client>?, _ out: UnsafeMutablePointer<tether_connection_stats>?
) -> Int32 {
  copyStats(client, to: out)
}

@c @implementation
public func tether_rtm_client_reset_lateness(_ client: UnsafeMutablePointer<tether_rtm_client>?)
  -> Int32
{
  resetLateness(client)
}

// MARK: - Names

@c @implementation
public func tether_rtm_connection_state_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(LoginState(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_rtm_connection_change_reason_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(LoginChangeReason(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_rtm_login_error_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(LoginError(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_rtm_logout_error_name(_ value: Int32) -> UnsafePointer<CChar>? {
  cString(LogoutError(rawValue: value)?.name ?? "UNKNOWN")
}
