import TetherCore
import TetherEdge

/// One scenario played on a ``SimWorld`` and checked after every step.
///
/// The invariants, each against what the clients sent, were told and received (never the
/// session's private fields):
/// 1. every state change is a (state, reason) pair docs/BEHAVIOUR.md allows, from a state its reason
///    may follow, never the same pair twice in a row; the session's state is the last one
///    reported;
/// 2. INTERRUPTED comes at exactly last data + interrupted_after, LOST and connection-lost at
///    exactly the effort's start + lost_after, JOIN_FAILED at exactly its start +
///    give_up_after; none of them is ever overdue, and a JOIN follows the previous one by at
///    most the backoff cap;
/// 3. a client whose link is clean (both directions up, no loss) rejoins within the backoff
///    cap plus a round trip of the later of its effort's start and the heal;
/// 4. DROPPED only when the last sign of life the server relayed is remote_offline_after old;
///    at most once per silence (a second needs the server to have heard the member since the
///    first verdict's silence began); and always, by last heard + remote_offline_after + one
///    latency, at a peer that was CONNECTED on a clean link for the whole time;
/// 5. a CONNECTED device on a clean link is seen present and not interrupted by every clean
///    CONNECTED peer of its channel within one heartbeat, one presence interval and a round
///    trip; a device that goes INTERRUPTED because its uplink failed (its last hearing was
///    answered over a clean downlink) and is not heard again for a heartbeat is reported
///    interrupted by those peers within one heartbeat of its own INTERRUPTED;
/// 6. nothing after leave but a new join's CONNECTING; no datagram from a DISCONNECTED or
///    FAILED session; member events consistent (no joined twice, no offline of a stranger).
public struct ScenarioRun {
  public let scenario: Scenario
  public internal(set) var world: SimWorld
  public internal(set) var stats = ScenarioStats()
  /// The trace, when asked for (``init(_:tracing:)``).
  public internal(set) var trace: [String] = []
  let tracing: Bool

  var models: [ClientModel]
  var cookies: [UInt64?]
  var effortStart: [Instant?]
  var traced: [Int]
  var actions: [(at: Instant, action: ScenarioAction)]
  var app: SeededRandom
  var cutCount: [[Int]]
  var faultCount: [[Int]]
  var cleanSince: [Instant?]
  var serverHeard: [Instant?]
  /// Per observer and member: the silence (its start) whose DROPPED was last counted.
  var demanded: [[Instant?]]
  /// Since when each client's downlink has been clean (no cut, no faults).
  var downCleanSince: [Instant?]
  /// A device went INTERRUPTED at `at` and its peer `observer` must say so within one
  /// heartbeat: checked once that heartbeat has passed.
  var pendingAgreements: [Agreement] = []

  struct Agreement {
    var device: Int
    var observer: Int
    /// When the device went INTERRUPTED, and when the server had last heard it then.
    var at: Instant
    var heard: Instant
    /// Since when the observer has been CONNECTED on a clean link.
    var since: Instant
  }
  var edge: EdgeConfig
  /// Invariant evaluations (a reference, so that `expect` need not be mutating).
  let checks = Counter()

  final class Counter {
    var value: UInt64 = 0
  }

  /// Longer than any delay a fault phase gives a datagram (latency, jitter and a spike).
  static let settle = Interval.milliseconds(600)

  /// - Parameter clientConfig: what the clients really run with, when it is not the
  ///   scenario's (the checker keeps assuming the scenario's): for proving that a client
  ///   that breaks a rule is caught.
  public init(_ scenario: Scenario, tracing: Bool = false, clientConfig: ChannelConfig? = nil) {
    self.scenario = scenario
    self.tracing = tracing
    // The scale is in range: this cannot throw.
    edge = try! EdgeConfig(
      appID: Fixture.appID, appCertificate: SimWorld.certificate, timeScale: scenario.edgeScale)
    world = SimWorld(config: edge, networkSeed: scenario.seed)
    world.recordsServerSent = false
    world.recordsDeliveries = true
    for i in 0..<scenario.clientCount {
      world.addClient(
        config: clientConfig ?? scenario.config, seed: scenario.seed &* 31 &+ UInt64(i))
      world.uplink[i] = scenario.clean[i]
      world.downlink[i] = scenario.clean[i]
    }
    let n = scenario.clientCount
    models = Array(repeating: ClientModel(), count: n)
    cookies = Array(repeating: nil, count: n)
    effortStart = Array(repeating: nil, count: n)
    traced = Array(repeating: 0, count: n)
    actions = scenario.plan
    app = SeededRandom(seed: scenario.seed ^ 0xA99)
    cutCount = Array(repeating: [0, 0], count: n)
    faultCount = Array(repeating: [0, 0], count: n)
    cleanSince = Array(repeating: .zero, count: n)
    serverHeard = Array(repeating: nil, count: n)
    demanded = Array(repeating: Array(repeating: nil, count: n), count: n)
    downCleanSince = Array(repeating: .zero, count: n)
    stats.scenarios = 1
  }

  var config: ChannelConfig { scenario.config }
  var now: Instant { world.now }

  /// Plays the scenario to its end; the first broken invariant ends it.
  public mutating func run() throws(Violation) {
    defer {
      stats.checks = checks.value
      stats.network = world.counters
    }
    let end = Instant.zero + scenario.duration
    while true {
      // Everything due by the next action (or the end) first, one step at a time.
      if world.step(until: min(actions.first?.at ?? end, end)) {
        stats.steps += 1
        try observe()
        continue
      }
      guard let (at, action) = actions.first, at <= end else { break }
      actions.removeFirst()
      world.run(until: at)
      try perform(action)
      stats.steps += 1
      try observe()
    }
    world.run(until: end)
    try observe()
  }

  // MARK: - Actions

  mutating func note(_ line: @autoclosure () -> String) {
    if tracing { trace.append("\(SimClock.text(now))  \(line())") }
  }

  mutating func schedule(_ action: ScenarioAction, after delay: Interval) {
    let at = now + delay
    let index = actions.firstIndex { $0.at > at } ?? actions.count
    actions.insert((at, action), at: index)
  }

  func directions(_ d: LinkDirection) -> [Int] {
    switch d {
    case .uplink: [0]
    case .downlink: [1]
    case .both: [0, 1]
    }
  }

  mutating func perform(_ action: ScenarioAction) throws(Violation) {
    note("> \(action)")
    switch action {
    case .join(let c, let expiresIn):
      stats.joins += 1
      if expiresIn != nil { stats.expiringTokens += 1 }
      let uid = scenario.uid(of: c)
      let channel = scenario.channels[c]
      let token = world.token(channel: channel, uid: uid, expiresIn: expiresIn ?? 3600)
      let wasIdle = models[c].state == .disconnected
      var refused = false
      do { try world.join(c, channel: channel, uid: uid, token: token) } catch { refused = true }
      checks.value += 1
      if refused == wasIdle {
        throw violation("call rules", c, "join_channel in \(models[c].state) refused: \(refused)")
      }
    case .leave(let c):
      stats.leaves += 1
      world.leave(c)
    case .renew(let c):
      stats.renewals += 1
      let token = world.token(
        channel: scenario.channels[c], uid: scenario.uid(of: c), expiresIn: 3600)
      let allowed =
        models[c].state != .disconnected
        && (models[c].state != .failed || models[c].reason == .tokenExpired)
      var refused = false
      do { try world.renew(c, token) } catch { refused = true }
      checks.value += 1
      if refused == allowed {
        throw violation("call rules", c, "renew_token in \(models[c].state) refused: \(refused)")
      }
    case .cut(let c, let d, let length):
      stats.cuts[d, default: 0] += 1
      for k in directions(d) { cutCount[c][k] += 1 }
      if let length { schedule(.heal(client: c, d), after: length) }
    case .heal(let c, let d):
      for k in directions(d) { cutCount[c][k] -= 1 }
    case .faults(let c, let d, let conditions, let length):
      stats.faultPhases += 1
      for k in directions(d) {
        faultCount[c][k] += 1
        if k == 0 { world.uplink[c] = conditions } else { world.downlink[c] = conditions }
      }
      schedule(.clean(client: c, d), after: length)
    case .clean(let c, let d):
      for k in directions(d) {
        faultCount[c][k] -= 1
        guard faultCount[c][k] == 0 else { continue }
        if k == 0 {
          world.uplink[c] = scenario.clean[c]
        } else {
          world.downlink[c] = scenario.clean[c]
        }
      }
    case .restartServer:
      stats.restarts += 1
      world.restartServer()
      for i in cleanSince.indices where cleanSince[i] != nil { cleanSince[i] = now }
    case .networkChanged(let c, let byUser):
      stats.networkChanges += 1
      world.act(c) { s, now, out in s.networkChanged(byUser: byUser, now: now, into: &out) }
    }
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
}
