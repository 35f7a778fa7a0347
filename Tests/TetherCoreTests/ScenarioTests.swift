import Testing
import TetherSim

@testable import TetherCore

/// The scenario simulator (`make sim-check` runs 10,000 of these in release): a few seeded
/// scenarios here, and proof that its invariants catch a client that breaks the rules.
@Suite struct ScenarioTests {
  @Test func seededScenarios_keepEveryInvariant() throws {
    var stats = ScenarioStats()
    let failure = ScenarioBatch.run(seeds: 1..<41, stats: &stats)
    #expect(failure == nil, "\(failure.map { "seed \($0.seed): \($0.violation)" } ?? "")")
    #expect(stats.scenarios == 40)
    #expect(stats.network.lost > 0 && stats.network.duplicated > 0 && stats.network.reordered > 0)
    #expect(stats.cuts[.uplink, default: 0] > 0 && stats.cuts[.downlink, default: 0] > 0)
    #expect(stats.restarts > 0 && stats.dropDemands > 0 && stats.interruptAgreements > 0)
  }

  @Test func aScenario_isAFunctionOfItsSeed() throws {
    var first = ScenarioRun(Scenario.generate(seed: 7), tracing: true)
    var second = ScenarioRun(Scenario.generate(seed: 7), tracing: true)
    try first.run()
    try second.run()
    #expect(first.trace == second.trace)
    #expect(first.stats.steps == second.stats.steps)
    #expect(!first.trace.isEmpty)
  }

  /// The first seed whose run breaks an invariant when the clients do not follow the
  /// thresholds the checker assumes; nil if none of `seeds` does.
  static func firstViolation(_ seeds: Range<UInt64>, _ change: (inout ChannelConfig) -> Void)
    -> Violation?
  {
    for seed in seeds {
      let scenario = Scenario.generate(seed: seed)
      var config = scenario.config
      change(&config)
      var run = ScenarioRun(scenario, clientConfig: config)
      do throws(Violation) { try run.run() } catch { return error }
    }
    return nil
  }

  @Test func interruptedLate_isCaught() {
    let v = Self.firstViolation(1..<20) { $0.interruptedAfter = .ms(450) }
    #expect(v?.invariant == "deadline at its instant")
  }

  @Test func droppedEarly_isCaught() {
    let v = Self.firstViolation(1..<40) { $0.remoteOfflineAfter = .ms(1800) }
    #expect(v?.invariant == "DROPPED never for a shorter silence")
  }

  @Test func retriesBeyondTheCap_areCaught() {
    let v = Self.firstViolation(1..<40) { $0.retry = RetryPolicy(base: .ms(50), cap: .ms(1600)) }
    #expect(v?.invariant == "retries within the cap")
  }

  @Test func giveUpLate_isCaught() {
    let v = Self.firstViolation(1..<40) { $0.giveUpAfter = $0.giveUpAfter + .ms(500) }
    #expect(v?.invariant == "nothing stuck past give-up", "\(v.map(\.description) ?? "none")")
  }
}
