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

/// One scenario played on a ``SimWorld`` and checked after every step.
///
/// The invariants, each against what the clients sent, were told and received (never the
/// session's private fields):
/// 1. every state change is a (state, reason) pair SPEC.md allows, from a state the reason
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
///    answered over a clean downlink) is reported interrupted by those peers within one
///    heartbeat of its own INTERRUPTED;
/// 6. nothing after leave but a new join's CONNECTING; no datagram from a DISCONNECTED or
///    FAILED session; member events consistent (no joined twice, no offline of a stranger).
public struct ScenarioRun {
  public let scenario: Scenario
  public private(set) var world: SimWorld
  public private(set) var stats = ScenarioStats()
  /// The trace, when asked for (``init(_:tracing:)``).
  public private(set) var trace: [String] = []
  private let tracing: Bool

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
  var pendingAgreements: [(device: Int, observer: Int, at: Instant, since: Instant)] = []
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

  private mutating func note(_ line: @autoclosure () -> String) {
    if tracing { trace.append("\(SimClock.text(now))  \(line())") }
  }

  private mutating func schedule(_ action: ScenarioAction, after delay: Interval) {
    let at = now + delay
    let index = actions.firstIndex { $0.at > at } ?? actions.count
    actions.insert((at, action), at: index)
  }

  private func directions(_ d: LinkDirection) -> [Int] {
    switch d {
    case .uplink: [0]
    case .downlink: [1]
    case .both: [0, 1]
    }
  }

  private mutating func perform(_ action: ScenarioAction) throws(Violation) {
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

  // MARK: - Checking

  private func violation(_ invariant: String, _ client: Int, _ detail: String) -> Violation {
    Violation(invariant: invariant, client: client, at: now, detail: detail)
  }

  private func expect(
    _ ok: Bool, _ invariant: String, _ client: Int, _ detail: @autoclosure () -> String
  ) throws(Violation) {
    checks.value += 1
    if !ok { throw violation(invariant, client, detail()) }
  }

  private func clientOf(uid: UInt32) -> Int? {
    let i = Int(uid) - 1
    return i >= 0 && i < scenario.clientCount ? i : nil
  }

  private mutating func observe() throws(Violation) {
    for d in world.deliveries { try received(d) }
    world.deliveries.removeAll(keepingCapacity: true)
    for i in 0..<scenario.clientCount {
      let items = world.clients[i].trace
      while traced[i] < items.count {
        let item = items[traced[i]]
        traced[i] += 1
        switch item {
        case .sent(let packet): try sent(packet, by: i)
        case .notified(let n): try notified(n, to: i)
        }
      }
    }
    for i in 0..<scenario.clientCount { try checkDeadlines(i) }
    try checkPeers()
    if !pendingAgreements.isEmpty { try checkPendingAgreements() }
  }

  private mutating func received(_ d: SimWorld.Delivery) throws(Violation) {
    let i = d.client
    if d.toServer {
      serverHeard[i] = d.at
      return
    }
    guard let packet = d.packet, packet.cookie == cookies[i], d.state != .disconnected else {
      return
    }
    try expect(
      d.state == models[i].state, "state", i, "delivered in \(d.state), model \(models[i].state)")
    switch packet.message {
    case .accept where models[i].attempting,
      .heartbeatAck where d.state == .connected,
      .sessionUnknown where d.state == .connected:
      models[i].lastData = d.at
    case .tokenRenewed where d.state == .connected && models[i].renewalPending:
      models[i].lastData = d.at
      models[i].renewalPending = false
    case .presence(let digest) where d.state == .connected:
      let own = scenario.uid(of: i)
      for entry in digest where entry.uid != own && entry.kind != .left {
        let seen = d.at - .milliseconds(UInt64(entry.silentForMs))
        if models[i].evidence[entry.uid].map({ seen > $0 }) ?? true {
          models[i].evidence[entry.uid] = seen
        }
      }
    default:
      break
    }
  }

  private mutating func sent(_ packet: Packet, by i: Int) throws(Violation) {
    let m = models[i]
    try expect(!m.left, "nothing after leave", i, "sent \(packet.message) after on_leave_channel")
    try expect(
      m.state != .disconnected && m.state != .failed, "idle sessions are silent", i,
      "sent \(packet.message) while \(m.state)")
    switch packet.message {
    case .join:
      try expect(m.attempting, "JOINs only while (re)joining", i, "JOIN while \(m.state)")
      cookies[i] = packet.cookie
      models[i].lastJoinAt = now
    case .renewToken:
      if m.state == .connected { models[i].renewalPending = true }
    case .heartbeat:
      try expect(m.state == .connected, "heartbeats only while CONNECTED", i, "in \(m.state)")
    default:
      break
    }
  }

  private mutating func notified(_ n: ChannelNotification, to i: Int) throws(Violation) {
    var m = models[i]
    defer { models[i] = m }
    if m.left {
      try expect(
        n == .connectionStateChanged(.connecting, .connecting), "nothing after leave", i, "\(n)")
    }
    switch n {
    case .connectionStateChanged(let s, let r):
      note("client \(i): \(s.name) / \(r.name)")
      try expect(r.state == s, "allowed pair", i, "\(s.name)/\(r.name)")
      try expect(
        m.reason.map { !(s == m.state && r == $0) } ?? true, "no pair twice", i,
        "\(s.name)/\(r.name) again")
      try expect(
        AllowedTransitions.allows(from: m.state, r), "allowed transition", i,
        "\(r.name) from \(m.state.name)")
      if r == .joinSuccess || r == .rejoinSuccess {
        try expect(
          (r == .rejoinSuccess) == m.everAccepted, "join vs rejoin success", i,
          "\(r.name) with everAccepted \(m.everAccepted)")
      }
      switch r {
      case .interrupted:
        try expect(
          now == m.lastData + config.interruptedAfter, "deadline at its instant", i,
          "INTERRUPTED, last data at \(SimClock.text(m.lastData))")
        expectPeersToAgree(interrupted: i, lastData: m.lastData)
      case .lost:
        try expect(
          m.outageSince.map { now == $0 + config.lostAfter } ?? false, "deadline at its instant",
          i, "LOST, effort since \(m.outageSince.map(SimClock.text) ?? "-")")
      case .joinFailed:
        try expect(
          m.outageSince.map { now == $0 + config.giveUpAfter } ?? false,
          "deadline at its instant", i,
          "JOIN_FAILED, effort since \(m.outageSince.map(SimClock.text) ?? "-")")
      default: break
      }
      let previous = m.state
      m.state = s
      m.reason = r
      switch s {
      case .connecting:
        m = ClientModel(state: s, reason: r)
        m.lastData = now
        m.outageSince = now
        effortStart[i] = now
      case .reconnecting where previous == .connected:
        m.outageSince = r == .keepAliveTimeout ? now : m.lastData
        m.lostReported = false
        m.lastJoinAt = nil
        m.connectedSince = nil
        effortStart[i] = now
      case .reconnecting where previous == .failed:
        m.outageSince = now
        m.lostReported = false
        m.lastJoinAt = nil
        m.renewalPending = false
        effortStart[i] = now
      case .reconnecting:
        break
      case .connected:
        m.outageSince = nil
        m.everAccepted = true
        m.renewalPending = false
        m.connectedSince = now
        m.lastJoinAt = nil
        effortStart[i] = nil
      case .failed, .disconnected:
        m.outageSince = nil
        m.connectedSince = nil
        m.lastJoinAt = nil
        m.renewalPending = false
        m.forgetMembers()
        effortStart[i] = nil
        if s == .failed && app.next() % 2 == 0 {
          schedule(.leave(client: i), after: .milliseconds(app.next() % 200))
          schedule(.join(client: i, expiresIn: nil), after: .milliseconds(200 + app.next() % 500))
        }
      }
    case .connectionLost:
      note("client \(i): connection lost")
      try expect(
        m.attempting && !m.lostReported
          && m.outageSince.map { now == $0 + config.lostAfter } ?? false,
        "deadline at its instant", i, "connection-lost in \(m.state)")
      m.lostReported = true
    case .joinChannelSuccess, .rejoinChannelSuccess:
      try expect(m.state == .connected, "callback order", i, "\(n) in \(m.state)")
    case .userJoined(let uid, _):
      note("client \(i): user joined \(uid)")
      try expect(
        m.state == .connected && m.view[uid] == nil, "member events", i, "joined \(uid) twice")
      m.view[uid] = false
    case .userOffline(let uid, let reason):
      note("client \(i): user offline \(uid) \(reason.name)")
      try expect(
        m.state == .connected && m.view[uid] != nil, "member events", i, "offline of \(uid)")
      m.view[uid] = nil
      m.offlineAt[uid] = now
      guard reason == .dropped else { break }
      let evidence = m.evidence[uid]
      try expect(
        evidence.map { now.since($0) >= config.remoteOfflineAfter } ?? false,
        "DROPPED never for a shorter silence", i,
        "DROPPED \(uid); last heard (relayed) at \(evidence.map(SimClock.text) ?? "never")")
      if let first = m.droppedAt[uid], let peer = clientOf(uid: uid) {
        let heard = serverHeard[peer]
        try expect(
          heard.map { $0 > first - config.remoteOfflineAfter } ?? false,
          "DROPPED once per silence", i,
          "DROPPED \(uid) again; first at \(SimClock.text(first)), server last heard it at "
            + "\(heard.map(SimClock.text) ?? "never")")
      }
      m.droppedAt[uid] = now
    case .remoteMemberInterrupted(let uid):
      note("client \(i): member \(uid) interrupted")
      try expect(m.view[uid] == false, "member events", i, "interrupted \(uid)")
      m.view[uid] = true
      m.interruptedAt[uid, default: []].append(now)
    case .remoteMemberResumed(let uid):
      note("client \(i): member \(uid) resumed")
      try expect(m.view[uid] == true, "member events", i, "resumed \(uid)")
      m.view[uid] = false
    case .tokenPrivilegeWillExpire, .requestToken:
      note("client \(i): \(n)")
      try expect(m.state != .disconnected, "token events", i, "\(n) while DISCONNECTED")
      if app.next() % 3 != 0 {
        schedule(.renew(client: i), after: .milliseconds(app.next() % 300))
      }
    case .joinAttempt:
      try expect(m.attempting, "attempts only while (re)joining", i, "in \(m.state)")
    case .leaveChannel:
      note("client \(i): left")
      try expect(
        m.state == .disconnected && m.reason == .leaveChannel, "callback order", i,
        "on_leave_channel after \(m.state)")
      m.left = true
    }
  }

  /// Nothing overdue, and a clean link rejoins within the backoff bound.
  private mutating func checkDeadlines(_ i: Int) throws(Violation) {
    let m = models[i]
    try expect(
      world.clients[i].state == m.state, "state is the last reported", i,
      "session \(world.clients[i].state), reported \(m.state)")
    switch m.state {
    case .connected:
      try expect(
        now <= m.lastData + config.interruptedAfter, "deadline at its instant", i,
        "still CONNECTED, last data at \(SimClock.text(m.lastData))")
    case .connecting, .reconnecting:
      guard let since = m.outageSince, let start = effortStart[i] else {
        throw violation("effort", i, "attempting with no effort")
      }
      try expect(
        now <= since + config.giveUpAfter, "nothing stuck past give-up", i,
        "still \(m.state), effort since \(SimClock.text(since))")
      try expect(
        m.lostReported || now <= since + config.lostAfter, "deadline at its instant", i,
        "no connection-lost, effort since \(SimClock.text(since))")
      try expect(
        m.lastJoinAt.map { now <= $0 + config.retry.cap } ?? false, "retries within the cap", i,
        "last JOIN at \(m.lastJoinAt.map(SimClock.text) ?? "never")")
      if let clean = cleanSince[i], clean <= now {
        let from = max(clean, start)
        let bound = config.retry.cap + scenario.cleanDelay(i) + scenario.cleanDelay(i)
        stats.healBounds += 1
        checks.value += 1
        if now > from + bound {
          throw violation(
            "a healed link rejoins within the backoff bound", i,
            "still \(m.state); clean since \(SimClock.text(clean)), effort since "
              + "\(SimClock.text(start)), bound \(SimClock.text(.zero + bound))")
        }
      }
    case .disconnected, .failed:
      break
    }
  }

  /// Device `a` went INTERRUPTED now. If the server's last hearing of it was answered over
  /// a clean downlink (so its last data is that answer: the uplink is what failed), every
  /// peer CONNECTED on a clean link since before that hearing, and seeing it present, must
  /// report it interrupted within one heartbeat of now.
  private mutating func expectPeersToAgree(interrupted a: Int, lastData: Instant) {
    guard let heard = serverHeard[a], lastData >= heard, let down = downCleanSince[a],
      down <= heard
    else { return }
    let uid = scenario.uid(of: a)
    for b in 0..<scenario.clientCount where b != a && scenario.channels[b] == scenario.channels[a] {
      guard let sinceB = cleanConnected(b), sinceB <= heard, models[b].view[uid] != nil else {
        continue
      }
      pendingAgreements.append((a, b, now, sinceB))
    }
  }

  private mutating func checkPendingAgreements() throws(Violation) {
    let hb = config.heartbeatInterval
    var kept: [(device: Int, observer: Int, at: Instant, since: Instant)] = []
    for p in pendingAgreements {
      guard now > p.at + hb else {
        kept.append(p)
        continue
      }
      // The peer must have stayed as it was, and the member must not have left.
      let uid = scenario.uid(of: p.device)
      guard cleanConnected(p.observer) == p.since,
        models[p.observer].offlineAt[uid].map({ $0 < p.at - hb }) ?? true
      else { continue }
      stats.interruptAgreements += 1
      let reports = models[p.observer].interruptedAt[uid] ?? []
      try expect(
        reports.contains { $0 + hb >= p.at && $0 <= p.at + hb }, "peers agree within one heartbeat",
        p.observer,
        "device \(p.device) INTERRUPTED at \(SimClock.text(p.at)); reported interrupted at "
          + "\(reports.map(SimClock.text))")
    }
    pendingAgreements = kept
  }

  /// Since when `i` has been CONNECTED on a clean link, if it is now.
  private func cleanConnected(_ i: Int) -> Instant? {
    guard let connected = models[i].connectedSince, let clean = cleanSince[i], clean <= now
    else { return nil }
    return max(connected, clean)
  }

  /// DROPPED when it must be, and peers that see a connected device.
  private mutating func checkPeers() throws(Violation) {
    let n = scenario.clientCount
    for b in 0..<n {
      guard let sinceB = cleanConnected(b) else { continue }
      for a in 0..<n where a != b && scenario.channels[a] == scenario.channels[b] {
        let uid = scenario.uid(of: a)
        // A member silent at the server for remote_offline_after is DROPPED.
        if let heard = serverHeard[a], sinceB <= heard,
          now > heard + config.remoteOfflineAfter + scenario.cleanDelay(b) + .milliseconds(1)
        {
          let dropped = models[b].droppedAt[uid].map { $0 >= heard } ?? false
          if dropped && demanded[b][a] != heard {
            // Counted once per silence: the demand held and was met.
            demanded[b][a] = heard
            stats.dropDemands += 1
          }
          if models[b].view[uid] != nil {
            try expect(
              models[b].droppedAt[uid].map { $0 >= heard } ?? false,
              "DROPPED when silent longer than remote_offline_after", b,
              "\(uid) last heard by the server at \(SimClock.text(heard)), still present")
          }
        }
        // A connected device is seen present and not interrupted.
        if let sinceA = cleanConnected(a), let cookie = cookies[a],
          world.server.session(cookie: cookie) != nil
        {
          let bound =
            config.heartbeatInterval + edge.presenceInterval + scenario.cleanDelay(a)
            + scenario.cleanDelay(a) + scenario.cleanDelay(b) + scenario.cleanDelay(b)
          if now > max(sinceA, sinceB) + bound {
            stats.agreements += 1
            try expect(
              models[b].view[uid] == false, "peers agree within one heartbeat", b,
              "\(uid) CONNECTED since \(SimClock.text(sinceA)) but seen "
                + (models[b].view[uid] == nil ? "absent" : "interrupted"))
          }
        }
      }
    }
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
