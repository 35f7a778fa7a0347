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

/// What the checker knows of one client, rebuilt from what it sent, what it was told and
/// what reached it; never read from the session's private fields.
struct ClientModel {
  var state: ConnectionState = .disconnected
  var reason: ConnectionChangedReason?
  /// on_leave_channel came: nothing more until the next CONNECTING.
  var left = false
  /// The last answer that proves the server heard this client (accept, heartbeat ack,
  /// token renewed, session unknown), or the join call.
  var lastData: Instant = .zero
  /// The (re)join effort's clock, while CONNECTING or RECONNECTING.
  var outageSince: Instant?
  var lostReported = false
  var lastJoinAt: Instant?
  /// A RENEW_TOKEN went out while CONNECTED and was not answered.
  var renewalPending = false
  var everAccepted = false
  var connectedSince: Instant?
  /// Remote members as the app was told: uid → interrupted.
  var view: [UInt32: Bool] = [:]
  /// uid → the latest "last heard" the server relayed to this client (arrival − silence).
  var evidence: [UInt32: Instant] = [:]
  /// uid → when this client last reported it DROPPED (this membership).
  var droppedAt: [UInt32: Instant] = [:]
  /// uid → when this client reported it offline (QUIT or DROPPED), the latest.
  var offlineAt: [UInt32: Instant] = [:]
  /// uid → when this client reported it interrupted, each time.
  var interruptedAt: [UInt32: [Instant]] = [:]

  var attempting: Bool { state == .connecting || state == .reconnecting }

  mutating func forgetMembers() {
    view.removeAll()
    evidence.removeAll()
    droppedAt.removeAll()
    offlineAt.removeAll()
    interruptedAt.removeAll()
  }
}
