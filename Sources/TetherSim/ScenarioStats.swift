import TetherCore
import TetherEdge

/// Counts over one or many scenarios: what ran, what the network did, what was checked.
public struct ScenarioStats: Sendable {
  public var scenarios = 0
  /// Simulator steps: one deadline (server or client) or one delivery each, plus the
  /// scenario's own actions.
  public var steps: UInt64 = 0
  /// Invariant evaluations (one rule applied to one client or pair at one step).
  public var checks: UInt64 = 0
  public var network = NetworkCounters()
  private var tallies: [Tally: UInt64] = [:]

  public init() {}

  /// How many of `tally` there were.
  public subscript(_ tally: Tally) -> UInt64 {
    get { tallies[tally, default: 0] }
    set { tallies[tally] = newValue }
  }

  public mutating func add(_ other: ScenarioStats) {
    scenarios += other.scenarios
    steps += other.steps
    checks += other.checks
    network += other.network
    tallies.merge(other.tallies, uniquingKeysWith: +)
  }

  /// One line, the figures to quote (`noun`: what one scenario is called): the counts
  /// that are not zero.
  public func summary(_ noun: String) -> String {
    let tallies = Tally.allCases.filter { self[$0] > 0 }.map { "\(self[$0]) \($0.rawValue)" }
    let datagrams = NetworkCounters.Kind.allCases.filter { network[$0] > 0 }
    return "\(scenarios) \(noun)s, \(steps) steps, \(checks) invariant checks; "
      + tallies.joined(separator: ", ") + "; datagrams: "
      + datagrams.map { "\(network[$0]) \($0.rawValue)" }.joined(separator: ", ")
  }
}

/// What a scenario counts besides steps and checks: calls, outcomes, faults, and the times a
/// conditional rule's conditions held and its outcome was demanded. The raw value labels it.
public enum Tally: String, CaseIterable, Sendable {
  case uplinkCuts = "uplink cuts"
  case downlinkCuts = "downlink cuts"
  case twoWayCuts = "two-way cuts"
  case faultPhases = "fault phases"
  case restarts = "server restarts"
  case joins
  case expiringTokens = "expiring tokens"
  case leaves, renewals
  case networkChanges = "network changes"
  case logins, logouts
  case channelCalls = "channel joins/leaves"
  case kicks = "admin kicks"
  case connected = "CONNECTED"
  case resumed
  case remoteLogins = "REMOTE_LOGIN"
  case banned = "BANNED"
  case tokenExpired = "token-expired"
  case memberEvents = "member events"
  case healBounds = "heal bounds"
  case dropDemands = "DROPPED demands"
  case peerAgreements = "peer agreements"
  case interruptAgreements = "on an interruption"
  /// Member events checked against the previous one of their (channel, user), and those
  /// from a server session the checker's boundaries no longer cover.
  case alternations = "member-event alternations"
  case unchecked = "events unchecked"
  /// Closing-phase agreements: a client, its channels, or its view of a member, against
  /// the server.
  case endAgreements = "end agreements"

  static func cuts(_ direction: LinkDirection) -> Tally {
    switch direction {
    case .uplink: .uplinkCuts
    case .downlink: .downlinkCuts
    case .both: .twoWayCuts
    }
  }
}
