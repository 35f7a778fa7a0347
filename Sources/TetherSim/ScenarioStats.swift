// SPDX-License-Identifier: Apache-2.0
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
    let tallies = Tally.allCases.filter { self[$0] > 0 }.map { "\(self[$0]) \($0.label)" }
    let datagrams = NetworkCounters.Kind.allCases.filter { network[$0] > 0 }
    return "\(scenarios) \(noun)s, \(steps) steps, \(checks) invariant checks; "
      + tallies.joined(separator: ", ") + "; datagrams: "
      + datagrams.map { "\(network[$0]) \($0.label)" }.joined(separator: ", ")
  }
}

/// A count's name in words: `peerAgreements` is "peer agreements".
public protocol Labelled {}

extension Labelled {
  public var label: String {
    String(describing: self).reduce(into: "") {
      $0 += $1.isUppercase ? " " + $1.lowercased() : "\($1)"
    }
  }
}

/// What a scenario counts besides steps and checks: calls, outcomes, faults, and the times a
/// conditional rule's conditions held and its outcome was demanded.
public enum Tally: CaseIterable, Sendable, Labelled {
  case uplinkCuts, downlinkCuts, twoWayCuts, faultPhases, serverRestarts
  case joins, expiringTokens, leaves, renewals, networkChanges, adminKicks
  case logins, logouts, channelCalls, connected, resumed, remoteLogins, banned, tokenExpired
  case memberEvents, healBounds, dropDemands, peerAgreements, interruptAgreements
  /// Member events checked against the previous one of their (channel, user), and those
  /// from a server session the checker's boundaries no longer cover.
  case memberEventAlternations, uncheckedEvents
  /// Closing-phase agreements: a client, its channels, or its view of a member, against
  /// the server.
  case endAgreements
  /// Datagrams the ``Attacker`` sent a client (none may change its session).
  case attacks

  static func cuts(_ d: LinkDirection) -> Tally {
    d == .uplink ? .uplinkCuts : d == .downlink ? .downlinkCuts : .twoWayCuts
  }
}
