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
  public var cuts: [LinkDirection: UInt64] = [:]
  public var faultPhases: UInt64 = 0
  public var restarts: UInt64 = 0
  public var joins: UInt64 = 0
  public var expiringTokens: UInt64 = 0
  public var leaves: UInt64 = 0
  public var renewals: UInt64 = 0
  public var networkChanges: UInt64 = 0
  /// Times a conditional rule's conditions held and its outcome was demanded.
  public var healBounds: UInt64 = 0
  public var dropDemands: UInt64 = 0
  public var agreements: UInt64 = 0
  /// Devices INTERRUPTED with a working downlink whose peers had to agree within a beat.
  public var interruptAgreements: UInt64 = 0

  public init() {}

  public mutating func add(_ other: ScenarioStats) {
    scenarios += other.scenarios
    steps += other.steps
    checks += other.checks
    network += other.network
    for (k, v) in other.cuts { cuts[k, default: 0] += v }
    faultPhases += other.faultPhases
    restarts += other.restarts
    joins += other.joins
    expiringTokens += other.expiringTokens
    leaves += other.leaves
    renewals += other.renewals
    networkChanges += other.networkChanges
    healBounds += other.healBounds
    dropDemands += other.dropDemands
    agreements += other.agreements
    interruptAgreements += other.interruptAgreements
  }

  /// One line: the figures to quote.
  public var summary: String {
    let n = network
    return "\(scenarios) scenarios, \(steps) steps, \(checks) invariant checks "
      + "(\(healBounds) heal bounds, \(dropDemands) DROPPED demands, \(agreements) peer agreements, "
      + "\(interruptAgreements) on an interruption); "
      + "faults: \(cuts[.uplink, default: 0]) uplink cuts, \(cuts[.downlink, default: 0]) downlink cuts, "
      + "\(cuts[.both, default: 0]) two-way cuts, \(faultPhases) fault phases, \(restarts) server restarts, "
      + "\(n.lost) datagrams lost, \(n.cut) dropped by cuts, \(n.duplicated) duplicated, "
      + "\(n.reordered) reordered, \(n.spiked) delay spikes (of \(n.sent) sent); "
      + "calls: \(joins) joins (\(expiringTokens) expiring tokens), \(leaves) leaves, "
      + "\(renewals) renewals, \(networkChanges) network changes"
  }
}

/// Runs scenarios `first..<first+count` and stops at the first violation.
public enum ScenarioBatch {
  public static func run(seeds: Range<UInt64>, stats: inout ScenarioStats) -> (
    seed: UInt64, violation: Violation
  )? {
    for seed in seeds {
      var run = ScenarioRun(Scenario.generate(seed: seed))
      do throws(Violation) {
        try run.run()
      } catch {
        stats.add(run.stats)
        return (seed, error)
      }
      stats.add(run.stats)
    }
    return nil
  }
}
