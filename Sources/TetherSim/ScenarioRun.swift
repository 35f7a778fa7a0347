// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// One scenario played on a ``World`` and checked after every step: the profile's
/// invariants (ChannelProfile+Checks.swift, LoginProfile+Checks.swift list them), and for
/// both profiles:
/// 1. the server's side (World+Watch.swift): proofs of a round trip only from a session it
///    holds; a session ended for silence (forget-after, a login's grace) only when silent
///    that long, and none held past it; no reply larger than its request to an address
///    holding no session;
/// 2. after the plan the network heals for good and every client gets a fresh token: once
///    the network has been healthy past the edge's silence limit, every client that is on
///    agrees with the server (the profile's ``SimProfile/agree(_:)``);
/// 3. once every client left (logged out), the server holds no session, login, login
///    channel or queued member event;
/// 4. over protocol version 2 (every scenario's world is a ``SecureWorld``): no (key, nonce)
///    seals two messages (``NonceOracle``), and nothing the ``Attacker`` sends a client
///    changes its session.
public struct ScenarioRun<P: SimProfile> {
  public internal(set) var stage: Stage<P>
  /// The profile's checker: what it knows of the clients.
  var profile: P

  public var stats: ScenarioStats { stage.stats }
  /// The trace, when asked for (``init(_:tracing:clientConfig:setsAsideLate:)``).
  public var trace: [String] { stage.trace }

  /// - Parameters:
  ///   - clientConfig: what the clients really run with, when it is not the scenario's
  ///     (the checker keeps assuming the scenario's): for proving that a client that
  ///     breaks a rule is caught.
  ///   - setsAsideLate: see ``World/setsAsideLate``.
  ///   - attacksEdge: see ``Attacker/attacksEdge``.
  public init(
    _ scenario: Scenario<P>, tracing: Bool = false, clientConfig: P.Config? = nil,
    setsAsideLate: Bool = false, attacksEdge: Bool = false
  ) {
    stage = Stage(scenario, tracing: tracing, clientConfig: clientConfig)
    stage.world.setsAsideLate = setsAsideLate
    stage.world.attacker?.attacksEdge = attacksEdge
    profile = P(scenario)
  }

  /// Plays the scenario to its end, then its closing phase; the first broken invariant
  /// ends it.
  public mutating func run() throws(Violation) {
    defer { stage.collectStats() }
    try play(until: .zero + stage.scenario.duration)
    stage.healForGood()
    for call in profile.freshTokens(stage) { try performAndObserve(.call(call)) }
    let silence = stage.silenceLimit
    try play(until: stage.now + Stage<P>.settle + silence + .milliseconds(1500))
    for c in 0..<stage.scenario.clientCount where try stage.expectSettled(c) {
      try profile.agree(c, &stage)
    }
    for call in profile.goodbyes(stage) { try performAndObserve(.call(call)) }
    try play(until: stage.now + Stage<P>.settle + silence + .milliseconds(200))
    try stage.expectEmptyTables()
  }

  mutating func play(until end: Instant) throws(Violation) {
    while true {
      // Everything due by the next action (or the end) first, one step at a time.
      if stage.world.step(until: min(stage.actions.first?.at ?? end, end)) {
        stage.stats.steps += 1
        try observe()
        continue
      }
      guard let (at, action) = stage.actions.first, at <= end else { break }
      stage.actions.removeFirst()
      stage.world.run(until: at)
      try performAndObserve(action)
    }
    stage.world.run(until: end)
    try observe()
  }

  mutating func perform(_ action: ScenarioAction<P.Call>) throws(Violation) {
    stage.note("> \(action)")
    if case .call(let call) = action {
      try profile.perform(call, on: &stage)
    } else {
      stage.perform(action)
    }
    stage.updateLinks()
  }

  mutating func performAndObserve(_ action: ScenarioAction<P.Call>) throws(Violation) {
    try perform(action)
    stage.stats.steps += 1
    try observe()
  }

  mutating func observe() throws(Violation) {
    if let first = stage.world.violations.first { throw first }
    try profile.observe(&stage)
    stage.world.deliveries.removeAll(keepingCapacity: true)
    try stage.expectNoneHeldPastSilence()
  }
}

extension SimProfile {
  /// Runs scenarios `seeds`, stops at the first violation (a requirement: specialized).
  public static func batch(
    seeds: Range<UInt64>, stats: inout ScenarioStats, setsAsideLate: Bool = false,
    attacksEdge: Bool = false
  ) -> (seed: UInt64, violation: Violation)? {
    for seed in seeds {
      var run = ScenarioRun(
        Scenario<Self>.generate(seed: seed), setsAsideLate: setsAsideLate,
        attacksEdge: attacksEdge)
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

/// What a scenario's checks see and use, whatever the profile: the world, the plan still
/// to come, the app's own choices, the links' state, the counts and the trace.
public struct Stage<P: SimProfile> {
  public let scenario: Scenario<P>
  public internal(set) var world: SecureWorld<P.Client>
  public internal(set) var stats = ScenarioStats()
  public internal(set) var trace: [String] = []
  let tracing: Bool
  var actions: [(at: Instant, action: ScenarioAction<P.Call>)]
  /// The app's own choices (when it renews, rejoins, logs in again).
  var app: SeededRandom
  /// Per client and direction (uplink 0, downlink 1): cuts and fault phases under way.
  var cutCount: [[Int]]
  var faultCount: [[Int]]
  /// Since when each client's link has been clean (both directions up, no faults), and
  /// its downlink: once what the faults delayed has landed; nil while it is not.
  var cleanSince: [Instant?]
  var downCleanSince: [Instant?]
  /// The closing phase: the network is healed for good and the app plans nothing more.
  var ending = false

  /// Longer than any delay a fault phase gives a datagram (latency, jitter and a spike).
  static var settle: Interval { .milliseconds(600) }

  init(_ scenario: Scenario<P>, tracing: Bool, clientConfig: P.Config?) {
    self.scenario = scenario
    self.tracing = tracing
    // The scale is in range: this cannot throw.
    var edge = try! EdgeConfig(
      appID: Fixture.appID, appCertificate: simCertificate, timeScale: Scenario<P>.scale)
    edge.firstLoginSession = 0  // a function of the seed (restarts start elsewhere)
    // The world's random stream: a function of the seed, as everything else in the run.
    world = World(
      config: edge, crypto: SimCrypto(seed: scenario.seed), networkSeed: scenario.seed,
      watchesServer: true)
    world.recordsServerSent = false
    world.attacker = Attacker(seed: scenario.seed ^ 0xA77A_C4E5, chance: 0.02)
    world.recordsDeliveries = true
    for i in 0..<scenario.clientCount {
      _ = world.add(
        P.Client(config: clientConfig ?? scenario.config, seed: scenario.seed &* 31 &+ UInt64(i)))
      world.uplink[i] = scenario.clean[i]
      world.downlink[i] = scenario.clean[i]
    }
    let n = scenario.clientCount
    actions = scenario.plan
    app = SeededRandom(seed: scenario.seed ^ P.plan.appSalt)
    cutCount = Array(repeating: [0, 0], count: n)
    faultCount = Array(repeating: [0, 0], count: n)
    cleanSince = Array(repeating: .zero, count: n)
    downCleanSince = Array(repeating: .zero, count: n)
    stats.scenarios = 1
  }

  public var now: Instant { world.now }
  /// How long the edge holds a silent session: its forget-after, a login's grace.
  var silenceLimit: Interval {
    max(world.server.config.forgetAfter, world.server.config.loginGrace)
  }

  mutating func note(_ line: @autoclosure () -> String) {
    if tracing { trace.append("\(SimClock.text(now))  \(line())") }
  }

  /// Plans `action` `delay` from now (the app's reaction to what it was told).
  mutating func schedule(_ action: ScenarioAction<P.Call>, after delay: Interval) {
    guard !ending else { return }
    let at = now + delay
    let index = actions.firstIndex { $0.at > at } ?? actions.count
    actions.insert((at, action), at: index)
  }

  func violation(_ invariant: String, _ client: Int, _ detail: String) -> Violation {
    Violation(invariant: invariant, client: client, at: now, detail: detail)
  }

  mutating func expect(
    _ ok: Bool, _ invariant: String, _ client: Int, _ detail: @autoclosure () -> String
  ) throws(Violation) {
    stats.checks += 1
    if !ok { throw violation(invariant, client, detail()) }
  }

  // MARK: - The network and the server

  mutating func perform(_ action: ScenarioAction<P.Call>) {
    switch action {
    case .call: break
    case .cut(let c, let d, let length):
      stats[Tally.cuts(d)] += 1
      for k in Self.directions(d) { cutCount[c][k] += 1 }
      if let length { schedule(.heal(client: c, d), after: length) }
    case .heal(let c, let d):
      for k in Self.directions(d) { cutCount[c][k] -= 1 }
    case .faults(let c, let d, let conditions, let length):
      stats[.faultPhases] += 1
      for k in Self.directions(d) {
        faultCount[c][k] += 1
        set(c, k, conditions)
      }
      schedule(.clean(client: c, d), after: length)
    case .clean(let c, let d):
      for k in Self.directions(d) {
        faultCount[c][k] -= 1
        if faultCount[c][k] == 0 { set(c, k, scenario.clean[c]) }
      }
    case .restartServer:
      stats[.serverRestarts] += 1
      world.restartServer()
      for i in cleanSince.indices where cleanSince[i] != nil { cleanSince[i] = now }
    }
  }

  /// Client `c`'s uplink (`k` 0) or downlink takes `conditions`.
  mutating func set(_ c: Int, _ k: Int, _ conditions: LinkConditions) {
    if k == 0 { world.uplink[c] = conditions } else { world.downlink[c] = conditions }
  }

  /// The directions' indices (uplink 0, downlink 1).
  static func directions(_ d: LinkDirection) -> [Int] {
    d == .both ? [0, 1] : [d == .uplink ? 0 : 1]
  }

  /// Cuts and heals what the counts say, and notes since when each link is clean.
  mutating func updateLinks() {
    for c in 0..<scenario.clientCount {
      world.uplinkUp[c] = cutCount[c][0] == 0
      world.downlinkUp[c] = cutCount[c][1] == 0
      let clean = cutCount[c] == [0, 0] && faultCount[c] == [0, 0]
      if !clean {
        cleanSince[c] = nil
      } else if cleanSince[c] == nil {
        // Clean once what the faults delayed has landed.
        cleanSince[c] = now + Self.settle
      }
      if cutCount[c][1] != 0 || faultCount[c][1] != 0 {
        downCleanSince[c] = nil
      } else if downCleanSince[c] == nil {
        downCleanSince[c] = now + Self.settle
      }
    }
  }

  /// The closing phase begins: every link heals for good, clean, and nothing more is
  /// planned.
  mutating func healForGood() {
    ending = true
    actions.removeAll()
    for c in 0..<scenario.clientCount {
      cutCount[c] = [0, 0]
      faultCount[c] = [0, 0]
      world.uplink[c] = scenario.clean[c]
      world.downlink[c] = scenario.clean[c]
    }
    updateLinks()
    note("> the network heals for good")
  }

  /// No session is held past the edge's silence limit (a login's grace ends on time;
  /// forget-after is applied every presence interval).
  mutating func expectNoneHeldPastSilence() throws(Violation) {
    let config = world.server.config
    for i in 0..<scenario.clientCount where world.sides[i].held {
      guard let heard = world.sides[i].lastHeard, let cookie = world.sides[i].cookie else {
        continue
      }
      let limit =
        world.server.session(cookie: world.serverKey(cookie, of: i)) != nil
        ? config.forgetAfter + config.presenceInterval : config.loginGrace
      try expect(
        now.since(heard) <= limit, "silence limit", i, "held, last heard \(SimClock.text(heard))")
    }
  }

  /// Client `c`, once the network has been healthy past the edge's silence limit: not
  /// still trying; if on, at a session the server holds. Whether it is on.
  mutating func expectSettled(_ c: Int) throws(Violation) -> Bool {
    let phase = world.clients[c].phase
    let state = world.clients[c].state
    try expect(phase != .attempting, "healthy network", c, "still \(state)")
    guard phase == .connected else { return false }
    try expect(world.sides[c].held, "healthy network", c, "CONNECTED, the server holds no session")
    stats[.endAgreements] += 1
    return true
  }

  mutating func expectEmptyTables() throws(Violation) {
    let tables = world.server.tableCounts
    try expect(
      tables.sessions == 0 && tables.logins == 0 && tables.loginChannels == 0
        && tables.queuedEvents == 0, "tables", 0, "after every client left: \(tables)")
  }

  mutating func collectStats() {
    stats.network = world.counters
    stats[.attacks] += world.attacker.map { $0.counts.reduce(0, +) } ?? 0
    stats.checks += world.serverChecks
  }
}
