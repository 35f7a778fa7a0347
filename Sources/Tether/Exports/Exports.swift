// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The functions of Include/tether.h (documented there) that both profiles share, and the
// shared halves of those each profile has (ChannelExports.swift, LoginExports.swift). Each
// function checks its handle, thread and arguments, calls the core, delivers what the core
// produced, and returns 0 or a negative TETHER_ERR_* code. None traps on bad input.

@c @implementation
public func tether_version() -> UInt32 {
  UInt32(TETHER_VERSION_MAJOR) << 16 | UInt32(TETHER_VERSION_MINOR) << 8
    | UInt32(TETHER_VERSION_PATCH)
}

@c @implementation
public func tether_error_name(_ value: Int32) -> UnsafePointer<CChar>? { errorName(value) }

/// The body of tether_error_name, as a Swift function the tests call too. (Inlined from
/// here, TetherError.name's switch becomes a table of pointers.)
func errorName(_ value: Int32) -> UnsafePointer<CChar> {
  value == 0 ? cString("OK") : cString(TetherError(rawValue: value)?.name ?? "UNKNOWN")
}

@c @implementation
public func tether_error_message(_ value: Int32) -> UnsafePointer<CChar>? {
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
    case .alreadyLoggedIn: "Already logged in, or logging in."
    case .tooOften: "Too many calls within one second."
    case .notLoggedIn: "Not logged in."
    case .wrongThread: "Not the loop's thread."
    }
  }
}

// MARK: - The shared halves

/// Runs `body` on the live connection behind an app's handle, on its own thread, with its
/// profile (a ``ChannelProfile`` behind a `tether_engine`, a ``LoginProfile`` behind a
/// `tether_rtm_client`); or returns the refusal of ``Connection/enter(handle:)``.
func withProfile<P: Profile>(_ handle: UnsafeRawPointer?, _ body: (Connection, P) -> Int32)
  -> Int32
{
  let (connection, refusal) = Connection.enter(handle: handle)
  guard let connection else { return refusal }
  defer { connection.leave() }
  return body(connection, unsafeDowncast(connection.profile, to: P.self))
}

/// tether_network_changed and tether_rtm_network_changed.
func networkChanged(_ handle: UnsafeRawPointer?) -> Int32 {
  withProfile(handle) { (connection, _: Profile) in
    connection.networkChanged(byUser: true)
    return 0
  }
}

/// tether_renew_token and tether_rtm_renew_token: the token checked, then the session's
/// rules.
func renewToken(_ handle: UnsafeRawPointer?, _ token: UnsafePointer<CChar>?) -> Int32 {
  withProfile(handle) { (connection, profile: Profile) in
    guard let token else { return TetherError.invalidArgument.rawValue }
    do throws(TetherError) {
      let token = try Token(validating: cStringBytes(token, limit: Token.maximumLength))
      try profile.renewToken(token, now: connection.now)
    } catch {
      return error.rawValue
    }
    connection.flush(rescheduling: true)
    return 0
  }
}

/// The raw value of the session's state for tether_get_connection_state and
/// tether_rtm_get_connection_state: DISCONNECTED (1, in both profiles) for NULL, a
/// destroyed connection, or a call from another thread.
func stateValue(_ handle: UnsafeRawPointer?) -> UInt32 {
  var state: Int32 = 1
  _ = withProfile(handle) { (_, profile: Profile) in
    state = profile.stateValue
    return 0
  }
  return UInt32(bitPattern: state)
}

/// tether_engine_reset_lateness and tether_rtm_client_reset_lateness: the connection's own
/// lateness histogram and its loop's emptied; the counts keep counting.
func resetLateness(_ handle: UnsafeRawPointer?) -> Int32 {
  withProfile(handle) { (connection, _: Profile) in
    connection.stats.lateness?.pointee = LatencyHistogram()
    connection.context.deadlines.lateness = LatencyHistogram()
    return 0
  }
}

/// tether_engine_get_stats and tether_rtm_client_get_stats: the figures copied into `out`
/// up to the size it declares (at least 8: the oldest caller knows `size` and
/// `deadline_source`), keeping that size.
func copyStats(_ handle: UnsafeRawPointer?, to out: UnsafeMutablePointer<tether_connection_stats>?)
  -> Int32
{
  withProfile(handle) { (connection, _: Profile) in
    guard let out, out.pointee.size >= 8 else { return TetherError.invalidArgument.rawValue }
    var stats = connection.publicStats
    let count = min(Int(out.pointee.size), MemoryLayout<tether_connection_stats>.size)
    stats.size = out.pointee.size
    withUnsafeBytes(of: &stats) { source in
      if let start = source.baseAddress {
        UnsafeMutableRawPointer(out).copyMemory(from: start, byteCount: count)
      }
    }
    return 0
  }
}
