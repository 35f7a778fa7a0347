import Testing
import TetherSim

@testable import TetherCore

/// The login simulator (`make sim-check` runs 10,000 of these in release): a few seeded
/// scenarios here, and proof that its checks catch the known missing session epoch when
/// the world stops setting its late datagrams aside.
@Suite struct LoginScenarioTests {
  @Test func seededLoginScenarios_keepEveryInvariant() {
    var stats = LoginScenarioStats()
    let failure = LoginScenarioBatch.run(seeds: 1..<41, stats: &stats)
    #expect(failure == nil, "\(failure.map { "seed \($0.seed): \($0.violation)" } ?? "")")
    #expect(stats.scenarios == 40)
    #expect(stats.network.lost > 0 && stats.network.duplicated > 0 && stats.network.reordered > 0)
    #expect(stats.restarts > 0 && stats.kicks > 0 && stats.banned > 0)
    #expect(stats.resumed > 0 && stats.remoteLogins > 0 && stats.tokenExpired > 0)
    #expect(stats.memberEvents > 0 && stats.alternations > 0 && stats.agreements > 0)
  }

  @Test func aLoginScenario_isAFunctionOfItsSeed() throws {
    var first = LoginScenarioRun(LoginScenario.generate(seed: 7), tracing: true)
    var second = LoginScenarioRun(LoginScenario.generate(seed: 7), tracing: true)
    try first.run()
    try second.run()
    #expect(first.trace == second.trace)
    #expect(first.stats.steps == second.stats.steps)
    #expect(!first.trace.isEmpty)
  }

  /// The late datagrams of another server session, found by the simulator (seed 3704): a
  /// LOGIN_HEARTBEAT of a lost server session confirms the new one, whose next RELOGIN is
  /// answered RESUMED (EdgeLoginStaleConfirmationTests); a late LOGIN_ACCEPT of the session
  /// held said "not resumed" (LoginDuplicateAcceptTests). With the server-session number
  /// the client tells them apart: delivered (the default of `tether-sim --login`), the
  /// scenario keeps every invariant, as it does with them set aside.
  @Test func lateDatagramsOfAnotherServerSession_keepTheAgreement_whenDelivered() {
    let scenario = LoginScenario.generate(seed: 3704)
    var delivered = LoginScenarioRun(scenario, dropsLateSessionDatagrams: false)
    #expect(throws: Never.self) { try delivered.run() }
    var dropped = LoginScenarioRun(scenario)
    #expect(throws: Never.self) { try dropped.run() }
  }
}
