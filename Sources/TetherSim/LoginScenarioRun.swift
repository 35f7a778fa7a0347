import TetherCore
import TetherEdge

/// One login scenario played on a ``LoginWorld``, checked after every step:
/// 1. every client step keeps ``LoginInvariants`` (valid (state, reason) pairs, results
///    owed and reported once, nothing after logout or while ABORTED, deadlines, cookies);
///    a login is refused exactly when not DISCONNECTED (or too often);
/// 2. the server's side (``LoginWorld``): proofs of a round trip only from a session it
///    holds; a session ended for its grace only when silent for it, and none held past it;
///    no reply larger than its request to an address holding no session;
/// 3. two clients of one user id are never both CONNECTED for longer than
///    interrupted_after and the longest delay (the older one is kicked, or interrupted);
/// 4. the member events each client takes for one (channel, user) alternate, joined and
///    left, within one membership of the client in that channel at the server; none is
///    about its own user; every LOGIN_HEARTBEAT counts exactly the events it took;
/// 5. after the network has been healthy past the grace: every client logged in is
///    CONNECTED at a session the server holds, in the channels the server has for it with
///    nothing pending; what it last heard of each member agrees with the server's rosters;
/// 6. once every client logged out, the server's login tables and queues are empty.
public struct LoginScenarioRun {
  public let scenario: LoginScenario
  public internal(set) var world: LoginWorld
  public internal(set) var stats = LoginScenarioStats()
  public internal(set) var trace: [String] = []
  let tracing: Bool

  var actions: [(at: Instant, action: LoginAction)]
  var app: SeededRandom
  var cutCount: [[Int]]
  var faultCount: [[Int]]
  /// The events each client took from its current server session (LOGIN_HEARTBEAT's count).
  var taken: [UInt32]
  /// The server session each client last took a LOGIN_ACCEPT of.
  var acceptedSession: [UInt32?] = []
  /// Per client, (channel, user) → the last event taken about it, and its number.
  var lastEvent: [[MemberKey2: (joined: Bool, sequence: UInt32)]]
  /// Since when two clients of one user id have both been CONNECTED.
  var bothConnectedSince: [Int: Instant] = [:]
  var ending = false

  struct MemberKey2: Hashable {
    var channel: [UInt8]
    var user: [UInt8]
  }

  /// Longer than any delay a fault phase gives a datagram.
  static let settle = Interval.milliseconds(600)

  /// - Parameter dropsLateSessionDatagrams: see ``LoginWorld/dropsLateSessionDatagrams``.
  public init(
    _ scenario: LoginScenario, tracing: Bool = false, dropsLateSessionDatagrams: Bool = false
  ) {
    self.scenario = scenario
    self.tracing = tracing
    var edge = try! EdgeConfig(
      appID: Fixture.appID, appCertificate: SimWorld.certificate, timeScale: scenario.edgeScale)
    edge.firstLoginSession = 0  // a function of the seed (restarts start elsewhere)
    world = LoginWorld(config: edge, networkSeed: scenario.seed)
    world.dropsLateSessionDatagrams = dropsLateSessionDatagrams
    for i in 0..<scenario.clientCount {
      world.addClient(config: scenario.config, seed: scenario.seed &* 31 &+ UInt64(i))
      world.uplink[i] = scenario.clean[i]
      world.downlink[i] = scenario.clean[i]
    }
    let n = scenario.clientCount
    actions = scenario.plan
    app = SeededRandom(seed: scenario.seed ^ 0x10A99)
    cutCount = Array(repeating: [0, 0], count: n)
    faultCount = Array(repeating: [0, 0], count: n)
    taken = Array(repeating: 0, count: n)
    acceptedSession = Array(repeating: nil, count: n)
    lastEvent = Array(repeating: [:], count: n)
    stats.scenarios = 1
  }

  var now: Instant { world.now }
  var grace: Interval { world.server.config.loginGrace }

  public mutating func run() throws(Violation) {
    defer {
      stats.network = world.counters
      stats.staleEpochDropped = world.staleEpochDropped
      stats.staleEpochUplinkDropped = world.staleEpochUplinkDropped
      stats.lateAcceptsDropped = world.lateAcceptsDropped
      stats.checks += world.serverChecks
    }
    let end = Instant.zero + scenario.duration
    try play(until: end)
    // The network heals for good; every logged-in client gets a fresh token.
    ending = true
    actions.removeAll()
    cutCount = cutCount.map { _ in [0, 0] }
    faultCount = faultCount.map { _ in [0, 0] }
    world.heal(clean: scenario.clean)
    note("> the network heals for good")
    for i in 0..<scenario.clientCount where isLoggingInOrIn(i) {
      try perform(.renew(client: i))
    }
    try play(until: now + Self.settle + grace + .milliseconds(1500))
    try agree()
    for i in 0..<scenario.clientCount where world.clients[i].state != .disconnected {
      try perform(.logout(client: i))
    }
    try play(until: now + Self.settle + grace + .milliseconds(200))
    let tables = world.server.tableCounts
    stats.checks += 1
    if tables.logins != 0 || tables.loginChannels != 0 || tables.queuedEvents != 0 {
      throw violation(
        "tables", 0,
        "after every logout: \(tables.logins) logins, \(tables.loginChannels) channels, "
          + "\(tables.queuedEvents) queued events")
    }
  }

  mutating func play(until end: Instant) throws(Violation) {
    while true {
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

  func violation(_ invariant: String, _ client: Int, _ detail: String) -> Violation {
    Violation(invariant: invariant, client: client, at: now, detail: detail)
  }

  mutating func note(_ line: @autoclosure () -> String) {
    if tracing { trace.append("\(SimClock.text(now))  \(line())") }
  }

  mutating func schedule(_ action: LoginAction, after delay: Interval) {
    guard !ending else { return }
    let at = now + delay
    let index = actions.firstIndex { $0.at > at } ?? actions.count
    actions.insert((at, action), at: index)
  }

  func isLoggingInOrIn(_ i: Int) -> Bool {
    let s = world.clients[i].state
    return s == .connecting || s == .connected || s == .reconnecting
  }

  func directions(_ d: LinkDirection) -> [Int] {
    switch d {
    case .uplink: [0]
    case .downlink: [1]
    case .both: [0, 1]
    }
  }

  // MARK: - Actions

  mutating func perform(_ action: LoginAction) throws(Violation) {
    note("> \(action)")
    switch action {
    case .login(let c, let expiresIn):
      stats.logins += 1
      let user = scenario.user(of: c)
      let before = world.clients[c].state
      let failure = world.login(c, token: world.token(for: user, expiresIn: expiresIn), user: user)
      stats.checks += 1
      switch failure {
      case nil where before != .disconnected, .alreadyLogin? where before == .disconnected:
        throw violation("call rules", c, "login in \(before.name): \(String(describing: failure))")
      default: break
      }
      if failure == nil {
        taken[c] = 0
        lastEvent[c] = [:]
      }
    case .logout(let c):
      stats.logouts += 1
      _ = world.logout(c)
    case .join(let c, let ch):
      stats.channelCalls += 1
      _ = world.call(c) { s, now, out throws(TetherError) in
        try s.joinChannel(LoginScenario.channels[ch], now: now, into: &out)
      }
    case .leave(let c, let ch):
      stats.channelCalls += 1
      _ = world.call(c) { s, now, out throws(TetherError) in
        try s.leaveChannel(LoginScenario.channels[ch], now: now, into: &out)
      }
    case .renew(let c):
      stats.renewals += 1
      let token = world.token(for: scenario.user(of: c), expiresIn: 3600)
      _ = world.call(c) { s, now, out throws(TetherError) in
        try s.renewToken(token, now: now, into: &out)
      }
    case .cut(let c, let d, let length):
      stats.cuts += 1
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
    case .networkChanged(let c):
      world.networkChanged(c)
    case .kickUser(let u, let ban):
      stats.kicks += 1
      world.kickUser(LoginScenario.users[u], banSeconds: ban)
    }
    if !ending {
      for c in 0..<scenario.clientCount {
        world.uplinkUp[c] = cutCount[c][0] == 0
        world.downlinkUp[c] = cutCount[c][1] == 0
      }
    }
  }

  // MARK: - Checks

  mutating func observe() throws(Violation) {
    if let first = world.violations.first { throw first }
    let steps = world.steps
    world.steps.removeAll(keepingCapacity: true)
    for step in steps { try check(step) }
    // Two CONNECTED clients of one user id.
    let bound = scenario.config.interruptedAfter + Self.settle + .milliseconds(100)
    for u in LoginScenario.users.indices {
      let connected = (0..<scenario.clientCount).filter {
        scenario.userOf[$0] == u && world.clients[$0].state == .connected
      }
      stats.checks += 1
      if connected.count < 2 {
        bothConnectedSince[u] = nil
      } else if let since = bothConnectedSince[u] {
        if now.since(since) > bound {
          throw violation(
            "one login per user", connected[0],
            "clients \(connected) CONNECTED since \(SimClock.text(since))")
        }
      } else {
        bothConnectedSince[u] = now
      }
    }
    // No session held past its grace.
    for i in 0..<scenario.clientCount where world.held[i] {
      stats.checks += 1
      if let heard = world.lastHeard[i], now.since(heard) > grace {
        throw violation("grace", i, "held, last heard \(SimClock.text(heard))")
      }
    }
  }

  mutating func check(_ step: LoginWorld.ClientStep) throws(Violation) {
    let c = step.client
    stats.checks += 1
    if tracing {
      switch step.step {
      case .datagram(let m?):
        let current = world.generation[c]
        note("client \(c) <- \(m) [server session \(step.generation ?? 0), now \(current)]")
      case .datagram(nil): note("client \(c) <- a foreign datagram")
      default: break
      }
      for packet in step.sent { note("client \(c) -> \(packet.message)") }
    }
    if let first = step.violations.first {
      throw violation("login invariants", c, "\(first) (step \(step.step))")
    }
    if case .login(started: true) = step.step {
      taken[c] = 0
      lastEvent[c] = [:]
      acceptedSession[c] = nil
    }
    if case .datagram(.loginAccept(let accept)) = step.step,
      step.before == .connecting || step.before == .connected || step.before == .reconnecting
    {
      if accept.resumed { stats.resumed += 1 }
      // The client numbers events per server session: only another session's number
      // starts its count again (a late "not resumed" of the same session does not).
      if accept.session != acceptedSession[c] {
        taken[c] = 0
        lastEvent[c] = [:]
        acceptedSession[c] = accept.session
      }
    }
    let own = scenario.user(of: c).bytes
    for notification in step.notifications {
      switch notification {
      case .connectionStateChanged(let state, let reason):
        note("client \(c): \(state.name)/\(reason.name)")
        if state == .connected { stats.connected += 1 }
        if reason == .remoteLogin { stats.remoteLogins += 1 }
        if reason == .bannedByServer { stats.banned += 1 }
        if state == .aborted {
          // The app logs out, and later maybe in again.
          schedule(.logout(client: c), after: .milliseconds(app.next() % 300))
          if app.next() % 2 == 0 {
            schedule(
              .login(client: c, expiresIn: 3600), after: .milliseconds(400 + app.next() % 1500))
          }
        } else if state == .disconnected, reason != .logout, app.next() % 2 == 0 {
          schedule(
            .login(client: c, expiresIn: 3600), after: .milliseconds(1000 + app.next() % 1000))
        }
      case .tokenExpired:
        stats.tokenExpired += 1
        note("client \(c): token-expired")
        schedule(.renew(client: c), after: .milliseconds(20 + app.next() % 300))
      case .memberJoined(let channel, let user), .memberLeft(let channel, let user):
        stats.memberEvents += 1
        let joined = { if case .memberJoined = notification { true } else { false } }()
        taken[c] &+= 1
        let sequence = taken[c]
        note(
          "client \(c): member \(joined ? "joined" : "left") "
            + "\(String(decoding: user, as: UTF8.self)) in \(String(decoding: channel, as: UTF8.self)) (#\(sequence))"
        )
        stats.checks += 1
        if user.elementsEqual(own) {
          throw violation("member events", c, "an event about its own user")
        }
        let key = MemberKey2(channel: Array(channel), user: Array(user))
        defer { lastEvent[c][key] = (joined, sequence) }
        // Only events of the server session the world's boundaries describe.
        guard step.generation == world.generation[c], world.held[c] else {
          stats.unchecked += 1
          continue
        }
        guard let previous = lastEvent[c][key] else { continue }
        stats.alternations += 1
        guard previous.joined == joined else { continue }
        let name = try! ChannelName(validating: Array(channel))
        let rejoined = (world.joinedAtEvent[c][name] ?? []).contains {
          previous.sequence <= $0 && $0 < sequence
        }
        if !rejoined {
          throw violation(
            "member events", c,
            "\(joined ? "joined" : "left") twice in a row for \(String(decoding: user, as: UTF8.self)) "
              + "(#\(previous.sequence), #\(sequence))")
        }
      default: break
      }
    }
    // What it sent after them (a heartbeat due at the same instant comes after).
    for packet in step.sent {
      if case .loginHeartbeat(_, let received) = packet.message {
        stats.checks += 1
        if received != taken[c] {
          throw violation("event count", c, "heartbeat says \(received) taken, took \(taken[c])")
        }
      }
    }
  }

  /// After the network has been healthy past the grace.
  mutating func agree() throws(Violation) {
    for c in 0..<scenario.clientCount {
      let session = world.clients[c]
      stats.checks += 1
      switch session.state {
      case .connecting, .reconnecting:
        throw violation("healthy network", c, "still \(session.state.name)")
      case .disconnected, .aborted: continue
      case .connected: break
      }
      guard let cookie = world.cookie(c), let held = world.server.loginSession(cookie: cookie)
      else { throw violation("healthy network", c, "CONNECTED, the server holds no session") }
      stats.agreements += 1
      if world.acceptedGeneration[c] == world.generation[c], taken[c] != world.eventsSent[c] {
        throw violation(
          "member events", c, "took \(taken[c]) events, the server sent \(world.eventsSent[c])")
      }
      if Set(held.channels) != Set(session.joinedChannels) || session.pendingChannelOperations != 0
      {
        throw violation(
          "channels", c,
          "client in \(session.joinedChannels.map(\.bytes)) (\(session.pendingChannelOperations) pending), "
            + "server \(held.channels.map(\.bytes))")
      }
      for channel in held.channels {
        let roster = Set(world.server.loginMembers(of: channel).map(\.bytes))
        let since = world.joinedAtEvent[c][channel]?.last ?? 0
        for (key, last) in lastEvent[c] where key.channel == channel.bytes && last.sequence > since
        {
          stats.agreements += 1
          if roster.contains(key.user) != last.joined {
            throw violation(
              "member view", c,
              "last heard \(String(decoding: key.user, as: UTF8.self)) "
                + "\(last.joined ? "joined" : "left") in \(String(decoding: channel.bytes, as: UTF8.self)), "
                + "roster \(roster.map { String(decoding: $0, as: UTF8.self) }.sorted())")
          }
        }
      }
    }
  }
}
