// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The scenario simulator of both profiles (`make sim-check` runs 10,000 channel and
/// 15,000 login scenarios in release): a few seeded scenarios of each here, proof that its
/// invariants catch a client that breaks the rules, and that its checks hold whether the
/// late datagrams of another login server session are delivered or set aside.
@Suite struct ScenarioTests {
  static func batch<P: SimProfile>(_: P.Type, seeds: Range<UInt64>) -> ScenarioStats {
    var stats = ScenarioStats()
    let failure = P.batch(seeds: seeds, stats: &stats)
    #expect(failure == nil, "\(failure.map { "seed \($0.seed): \($0.violation)" } ?? "")")
    #expect(stats.scenarios == seeds.count)
    #expect(stats.network[.lost] > 0 && stats.network[.duplicated] > 0)
    #expect(stats.network[.reordered] > 0)
    #expect(stats[.uplinkCuts] > 0 && stats[.downlinkCuts] > 0 && stats[.serverRestarts] > 0)
    #expect(stats[.endAgreements] > 0)
    // Over version 2, with the attacker on every client's path (none of it changed a
    // session, or the batch would have failed).
    #expect(stats[.attacks] > 0)
    return stats
  }

  @Test func seededScenarios_keepEveryInvariant() {
    let stats = Self.batch(ChannelProfile.self, seeds: 1..<41)
    #expect(stats[.dropDemands] > 0 && stats[.interruptAgreements] > 0)
  }

  @Test func seededLoginScenarios_keepEveryInvariant() {
    let stats = Self.batch(LoginProfile.self, seeds: 1..<41)
    #expect(stats[.adminKicks] > 0 && stats[.banned] > 0)
    #expect(stats[.resumed] > 0 && stats[.remoteLogins] > 0 && stats[.tokenExpired] > 0)
    #expect(stats[.memberEvents] > 0 && stats[.memberEventAlternations] > 0)
  }

  static func expectReplays<P: SimProfile>(_: P.Type, seed: UInt64) throws {
    var first = ScenarioRun(Scenario<P>.generate(seed: seed), tracing: true)
    var second = ScenarioRun(Scenario<P>.generate(seed: seed), tracing: true)
    try first.run()
    try second.run()
    #expect(first.trace == second.trace)
    #expect(first.stats.steps == second.stats.steps)
    #expect(!first.trace.isEmpty)
  }

  @Test func aScenario_isAFunctionOfItsSeed() throws {
    try Self.expectReplays(ChannelProfile.self, seed: 7)
    try Self.expectReplays(LoginProfile.self, seed: 7)
  }

  /// The late datagrams of another server session, found by the simulator (seed 3704): a
  /// LOGIN_HEARTBEAT of a lost server session confirms the new one, whose next RELOGIN is
  /// answered RESUMED (EdgeLoginStaleConfirmationTests); a late LOGIN_ACCEPT of the session
  /// held said "not resumed" (LoginDuplicateAcceptTests). With the server-session number
  /// the client tells them apart: delivered (the default of `tether-sim --login`), the
  /// scenario keeps every invariant, as it does with them set aside.
  @Test func lateDatagramsOfAnotherServerSession_keepTheAgreement_whenDelivered() {
    let scenario = Scenario<LoginProfile>.generate(seed: 3704)
    var delivered = ScenarioRun(scenario)
    #expect(throws: Never.self) { try delivered.run() }
    var setAside = ScenarioRun(scenario, setsAsideLate: true)
    #expect(throws: Never.self) { try setAside.run() }
  }

  /// Found by the channel scenarios' closing phase (`make soak`, seeds 26609, 31200 and
  /// 40213): renew_token while CONNECTING only replaced the token of the next JOIN. When
  /// the accept of the JOIN sent with the old token came first, the client took that
  /// token's time left and ignored the later RESUMED accept of the retry that carried the
  /// new one; at the old token's expiry it went FAILED/TOKEN_EXPIRED although the app
  /// renewed first (docs/BEHAVIOUR.md §1.5) and the server held the session with the new
  /// token. Now the new token follows such an accept in a RENEW_TOKEN (CallRulesTests).
  @Test func renewalWhileConnecting_survivesTheOldTokensAccept() {
    for seed: UInt64 in [26609, 31200, 40213] {
      var run = ScenarioRun(Scenario<ChannelProfile>.generate(seed: seed))
      #expect(throws: Never.self, "seed \(seed)") { try run.run() }
    }
  }

  /// Found by `make soak LOGIN=1` (seeds 32175 and 59033): in the closing phase a client's
  /// channels disagreed with the server's. After a server restart, a LOGIN under the
  /// client's cookie (32175: a late copy of its first; 59033: a network change's, sent while
  /// CONNECTED) made a new server session whose LOGIN_ACCEPT was lost, while the client went
  /// on in the session it had: its heartbeats confirmed the new one, its operations were
  /// applied or acknowledged there (32175: two stayed pending, acknowledged under a number
  /// the client took for another session's; 59033: the client in lobby, the server's
  /// session in no channel). Heartbeats and operations name their server session now, and
  /// the edge answers one of another session SESSION_UNKNOWN (EdgeLoginStaleConfirmationTests).
  @Test func loginChannels_agreeWithTheServer_afterTheNetworkHealed() {
    for seed: UInt64 in [32175, 59033] {
      var run = ScenarioRun(Scenario<LoginProfile>.generate(seed: seed))
      #expect(throws: Never.self, "seed \(seed)") { try run.run() }
    }
  }

  /// Found by the attacker sending the edge (`tether-sim --attack-edge`, seed 118): a CONFIRM
  /// replayed from the device's own address within its ticket's lifetime, while the edge
  /// still holds the session it made, is answered with the ACCEPT again (PROTOCOL.md §12.6,
  /// CONFIRM rule 4); the device's layer hands its RECONNECTING session that ACCEPT, and the
  /// device reports CONNECTED/REJOIN_SUCCESS with its uplink dead, which its peers never see.
  /// Without that replay the scenario holds.
  @Test func aConfirmReplayedFromTheDevicesAddress_changesNoSession() {
    var plain = ScenarioRun(Scenario<ChannelProfile>.generate(seed: 118))
    #expect(throws: Never.self) { try plain.run() }
    // The replayed CONFIRM's ACCEPT comes under the session's confirmed keys while it
    // rejoins with a new handshake: the layer drops it, so the dead uplink stays reported.
    var attacked = ScenarioRun(Scenario<ChannelProfile>.generate(seed: 118), attacksEdge: true)
    #expect(throws: Never.self) { try attacked.run() }
    var other = ScenarioRun(Scenario<ChannelProfile>.generate(seed: 6990), attacksEdge: true)
    #expect(throws: Never.self) { try other.run() }
  }

  /// The first seed whose run breaks an invariant when the clients do not follow the
  /// thresholds the checker assumes; nil if none of `seeds` does.
  static func firstViolation<P: SimProfile>(
    _: P.Type, _ seeds: Range<UInt64>, _ change: (inout P.Config) -> Void
  ) -> Violation? {
    for seed in seeds {
      let scenario = Scenario<P>.generate(seed: seed)
      var config = scenario.config
      change(&config)
      var run = ScenarioRun(scenario, clientConfig: config)
      do throws(Violation) { try run.run() } catch { return error }
    }
    return nil
  }

  static func firstViolation(_ seeds: Range<UInt64>, _ change: (inout ChannelConfig) -> Void)
    -> Violation?
  {
    firstViolation(ChannelProfile.self, seeds, change)
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

  @Test func loginInterruptedLate_isCaught() {
    let v = Self.firstViolation(LoginProfile.self, 1..<20) { $0.interruptedAfter = .ms(450) }
    #expect(v?.invariant == "deadline at its instant", "\(v.map(\.description) ?? "none")")
  }

  @Test func loginInterruptedEarly_isCaught() {
    let v = Self.firstViolation(LoginProfile.self, 1..<20) { $0.interruptedAfter = .ms(350) }
    #expect(v?.invariant == "deadline at its instant", "\(v.map(\.description) ?? "none")")
  }

  @Test func loginTimeoutLate_isCaught() {
    let v = Self.firstViolation(LoginProfile.self, 1..<40) { $0.loginTimeout = .ms(1200) }
    #expect(v?.invariant == "deadline at its instant", "\(v.map(\.description) ?? "none")")
  }
}
