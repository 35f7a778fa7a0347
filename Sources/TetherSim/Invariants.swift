// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Which state a reason may be reported from (docs/BEHAVIOUR.md §1, docs/STATES.md's table); the
/// state it leads to is the core's own ``ConnectionChangedReason/state``.
public enum AllowedTransitions {
  public static func allows(from state: ConnectionState, _ reason: ConnectionChangedReason)
    -> Bool
  {
    switch reason {
    case .connecting:
      return state == .disconnected
    case .joinSuccess:
      // From RECONNECTING only for a first join that was never accepted (RENEW_TOKEN after a
      // first join refused for an expired token): the checker tracks that separately.
      return state == .connecting || state == .reconnecting
    case .rejoinSuccess, .lost:
      return state == .reconnecting
    case .interrupted, .keepAliveTimeout:
      return state == .connected
    case .clientIPAddressChanged, .clientIPAddressChangedByUser, .settingProxyServer:
      return state == .connected || state == .reconnecting
    case .renewToken:
      return state == .failed
    case .leaveChannel:
      return state != .disconnected
    case .invalidToken, .joinFailed, .invalidAppID, .invalidChannelName, .rejectedByServer:
      return state == .connecting || state == .reconnecting
    case .bannedByServer, .sameUIDLogin, .tokenExpired:
      return state == .connecting || state == .connected || state == .reconnecting
    }
  }
}

/// A broken invariant: which, for whom, when, and what was seen.
public struct Violation: Error, CustomStringConvertible, Sendable {
  public var invariant: String
  public var client: Int
  public var at: Instant
  public var detail: String

  public var description: String {
    "\(invariant): client \(client) at \(SimClock.text(at)): \(detail)"
  }
}

public enum SimClock {
  /// `12.345678 s`.
  public static func text(_ t: Instant) -> String {
    let us = t.nanoseconds / 1000
    let fraction = String(us % 1_000_000)
    return "\(us / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
      + " s"
  }
}
