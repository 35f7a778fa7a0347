// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// The login profile's checker, after every step:
/// 1. every client step keeps ``LoginInvariants`` (valid (state, reason) pairs, results
///    owed and reported once, nothing after logout or while ABORTED, deadlines, cookies);
///    a login is refused exactly when not DISCONNECTED (or too often); join_channel,
///    leave_channel and renew_token exactly when their rules say;
/// 2. INTERRUPTED comes at exactly last data + interrupted_after (or on SESSION_UNKNOWN),
///    LOGIN_TIMEOUT at exactly the login + login_timeout; neither is ever overdue;
/// 3. two clients of one user id are never both CONNECTED for longer than
///    interrupted_after and the longest delay (the older one is kicked, or interrupted);
/// 4. the member events each client takes for one (channel, user) alternate, joined and
///    left, within one membership of the client in that channel at the server; none is
///    about its own user; every LOGIN_HEARTBEAT counts exactly the events it took;
/// 5. in the closing phase: every client logged in is CONNECTED at a session the server
///    holds, in the channels the server has for it with nothing pending; what it last
///    heard of each member agrees with the server's rosters.
public struct LoginProfile: SimProfile {
  public typealias Stage = TetherSim.Stage<LoginProfile>
  public typealias Client = LoginClient
  let scenario: Scenario<LoginProfile>
  /// The events each client took from its current server session (LOGIN_HEARTBEAT's count).
  var taken: [UInt32]
  /// The server session each client last took a LOGIN_ACCEPT of.
  var acceptedSession: [UInt32?]
  /// Per client, (channel, user) → the last event taken about it, and its number.
  var lastEvent: [[MemberKey: (joined: Bool, sequence: UInt32)]]
  /// Since when two clients of one user id have both been CONNECTED.
  var bothConnectedSince: [Int: Instant] = [:]
  var models: [Model]

  /// What the checker knows of one client's login, from its calls and what reached it.
  struct Model {
    /// The login call, and the last answer that proves the server heard the session (an
    /// accept, a heartbeat or channel ack of its server session, an awaited renewal).
    var loginAt: Instant = .zero
    var lastData: Instant = .zero
    /// A RENEW_TOKEN is not answered yet (a renew_token call while CONNECTED, or the one
    /// after an accept that may answer an attempt with the older token).
    var renewalPending = false
    /// The channels the app joined (and did not leave) since its login.
    var channels: Set<Int> = []
  }

  struct MemberKey: Hashable {
    var channel: [UInt8]
    var user: [UInt8]
  }

  public init(_ scenario: Scenario<LoginProfile>) {
    self.scenario = scenario
    let n = scenario.clientCount
    taken = Array(repeating: 0, count: n)
    acceptedSession = Array(repeating: nil, count: n)
    lastEvent = Array(repeating: [:], count: n)
    models = Array(repeating: Model(), count: n)
  }

  // MARK: - The app's calls

  public mutating func perform(_ call: Call, on stage: inout Stage) throws(Violation) {
    switch call {
    case .login(let c, let expiresIn):
      stage.stats[.logins] += 1
      let user = scenario.user(of: c)
      let before = stage.world.clients[c].state
      let token = stage.world.token(for: user, expiresIn: expiresIn)
      let failure = stage.world.login(c, token: token, user: user)
      try stage.expect(
        failure == nil
          ? before == .disconnected : failure != .alreadyLoggedIn || before != .disconnected,
        "call rules", c, "login in \(before.name): \(String(describing: failure))")
      if failure == nil {
        taken[c] = 0
        lastEvent[c] = [:]
        models[c] = Model(loginAt: stage.now, lastData: stage.now)
      }
    case .logout(let c):
      stage.stats[.logouts] += 1
      _ = stage.world.logout(c)
    case .join(let c, let ch), .leave(let c, let ch):
      stage.stats[.channelCalls] += 1
      let joins = { if case .join = call { true } else { false } }()
      let client = stage.world.clients[c]
      // Refused unless logging in or in, with fewer than 32 operations unacknowledged;
      // a join into a channel it is in, a leave from one it is not in.
      let expected: TetherError? =
        client.phase == .idle || client.session.pendingChannelOperations >= 32
        ? .notReady
        : models[c].channels.contains(ch) != joins ? nil : joins ? .joinChannelRejected : .notReady
      let failure = stage.world.call(c) { s, now, out throws(TetherError) in
        if joins {
          try s.joinChannel(Self.channels[ch], now: now, into: &out)
        } else {
          try s.leaveChannel(Self.channels[ch], now: now, into: &out)
        }
      }
      try stage.expect(
        failure == expected, "call rules", c, "\(call): \(String(describing: failure))")
      if failure == nil && joins { models[c].channels.insert(ch) }
      if failure == nil && !joins { models[c].channels.remove(ch) }
    case .renew(let c):
      stage.stats[.renewals] += 1
      let token = stage.world.token(for: scenario.user(of: c), expiresIn: 3600)
      let before = stage.world.clients[c].phase
      let failure = stage.world.call(c) { s, now, out throws(TetherError) in
        try s.renewToken(token, now: now, into: &out)
      }
      try stage.expect(
        (failure == nil) == (before != .idle), "call rules", c,
        "renew_token: \(String(describing: failure))")
      if failure == nil { models[c].renewalPending = before == .connected }
    case .networkChanged(let c):
      stage.stats[.networkChanges] += 1
      _ = stage.world.call(c) { s, now, out in s.networkChanged(now: now, into: &out) }
    case .kickUser(let u, let ban):
      stage.stats[.adminKicks] += 1
      stage.world.kickUser(Self.users[u], banSeconds: ban)
    }
  }

  /// Every client logging in or logged in.
  public func freshTokens(_ stage: Stage) -> [Call] {
    stage.world.clients.indices.filter { stage.world.clients[$0].phase != .idle }
      .map { .renew(client: $0) }
  }

  public func goodbyes(_ stage: Stage) -> [Call] {
    stage.world.clients.indices.filter { stage.world.clients[$0].state != .disconnected }
      .map { .logout(client: $0) }
  }

  // MARK: - After every step

  public mutating func observe(_ stage: inout Stage) throws(Violation) {
    for c in stage.world.clients.indices where !stage.world.clients[c].steps.isEmpty {
      let steps = stage.world.clients[c].steps
      stage.world.clients[c].steps.removeAll(keepingCapacity: true)
      for step in steps { try check(step, of: c, &stage) }
    }
    for c in 0..<scenario.clientCount { try checkDeadlines(c, &stage) }
    // Two CONNECTED clients of one user id.
    let bound = scenario.config.interruptedAfter + Stage.settle + .milliseconds(100)
    for u in Self.users.indices {
      let connected = (0..<scenario.clientCount).filter {
        scenario.role[$0] == u && stage.world.clients[$0].state == .connected
      }
      stage.stats.checks += 1
      if connected.count < 2 {
        bothConnectedSince[u] = nil
      } else if let since = bothConnectedSince[u] {
        if stage.now.since(since) > bound {
          throw stage.violation(
            "one login per user", connected[0],
            "clients \(connected) CONNECTED since \(SimClock.text(since))")
        }
      } else {
        bothConnectedSince[u] = stage.now
      }
    }
  }

  mutating func check(_ step: LoginClient.Step, of c: Int, _ stage: inout Stage) throws(Violation) {
    stage.stats.checks += 1
    if stage.tracing { trace(step, of: c, &stage) }
    if let first = step.violations.first {
      throw stage.violation("login invariants", c, "\(first) (step \(step.step))")
    }
    if case .login(started: true) = step.step {
      taken[c] = 0
      lastEvent[c] = [:]
      acceptedSession[c] = nil
    }
    if case .datagram(.loginAccept(let accept)) = step.step,
      step.before == .connecting || step.before == .connected || step.before == .reconnecting
    {
      if accept.resumed { stage.stats[.resumed] += 1 }
      // The client numbers events per server session: only another session's number
      // starts its count again (a late "not resumed" of the same session does not).
      if accept.session != acceptedSession[c] {
        taken[c] = 0
        lastEvent[c] = [:]
        acceptedSession[c] = accept.session
      }
    }
    if case .datagram(let message?) = step.step { heard(message, in: step, of: c) }
    for notification in step.notifications {
      try check(notification, in: step, of: c, &stage)
    }
    // What it sent after them (a heartbeat due at the same instant comes after).
    for packet in step.sent {
      switch packet.message {
      case .loginHeartbeat(_, _, let received):
        try stage.expect(
          received == taken[c], "event count", c,
          "heartbeat says \(received) taken, took \(taken[c])")
      case .renewToken:
        // After an accept that may answer an attempt with the older token, the renewed
        // one goes in a RENEW_TOKEN, as a renewal while CONNECTED does.
        if case .datagram(.loginAccept?) = step.step { models[c].renewalPending = true }
      default: break
      }
    }
  }

  /// The model's last data: what proves to the session that the server heard it.
  mutating func heard(_ message: Message, in step: LoginClient.Step, of c: Int) {
    switch (message, step.before) {
    case (.loginAccept, .connecting), (.loginAccept, .reconnecting):
      models[c].lastData = step.at
      // An accept that ends an effort settles a renewal (when an attempt carried the
      // older token, the RENEW_TOKEN it sends awaits an answer again: see below).
      models[c].renewalPending = false
    case (.loginAccept, .connected), (.heartbeatAck, .connected):
      models[c].lastData = step.at
    case (.channelAck(let session, _), .connected) where session == acceptedSession[c]:
      models[c].lastData = step.at
    case (.tokenRenewed, .connected) where models[c].renewalPending:
      models[c].lastData = step.at
      models[c].renewalPending = false
    default: break
    }
  }

  /// Neither INTERRUPTED nor LOGIN_TIMEOUT is overdue.
  mutating func checkDeadlines(_ c: Int, _ stage: inout Stage) throws(Violation) {
    let m = models[c]
    switch stage.world.clients[c].state {
    case .connected:
      try stage.expect(
        stage.now <= m.lastData + scenario.config.interruptedAfter, "deadline at its instant", c,
        "still CONNECTED, last data at \(SimClock.text(m.lastData))")
    case .connecting:
      try stage.expect(
        stage.now <= m.loginAt + scenario.config.loginTimeout, "deadline at its instant", c,
        "still CONNECTING, login at \(SimClock.text(m.loginAt))")
    default: break
    }
  }

  func trace(_ step: LoginClient.Step, of c: Int, _ stage: inout Stage) {
    switch step.step {
    case .datagram(let m?):
      let current = stage.world.sides[c].generation
      stage.note("client \(c) <- \(m) [server session \(step.generation ?? 0), now \(current)]")
    case .datagram(nil): stage.note("client \(c) <- a foreign datagram")
    default: break
    }
    for packet in step.sent { stage.note("client \(c) -> \(packet.message)") }
  }

  mutating func check(
    _ notification: LoginNotification, in step: LoginClient.Step, of c: Int,
    _ stage: inout Stage
  ) throws(Violation) {
    switch notification {
    case .connectionStateChanged(let state, let reason):
      stage.note("client \(c): \(state.name)/\(reason.name)")
      let m = models[c]
      let sessionUnknown = {
        if case .datagram(.sessionUnknown) = step.step { true } else { false }
      }()
      if reason == .interrupted && !sessionUnknown {
        try stage.expect(
          step.at == m.lastData + scenario.config.interruptedAfter, "deadline at its instant", c,
          "INTERRUPTED, last data at \(SimClock.text(m.lastData))")
      } else if reason == .loginTimeout {
        try stage.expect(
          step.at == m.loginAt + scenario.config.loginTimeout, "deadline at its instant", c,
          "LOGIN_TIMEOUT, login at \(SimClock.text(m.loginAt))")
      }
      if state == .connected { stage.stats[.connected] += 1 }
      if reason == .remoteLogin { stage.stats[.remoteLogins] += 1 }
      if reason == .bannedByServer { stage.stats[.banned] += 1 }
      if state == .aborted {
        // The app logs out, and later maybe in again.
        stage.schedule(.call(.logout(client: c)), after: .milliseconds(stage.app.next() % 300))
        if stage.app.next() % 2 == 0 {
          stage.schedule(
            .call(.login(client: c, expiresIn: 3600)),
            after: .milliseconds(400 + stage.app.next() % 1500))
        }
      } else if state == .disconnected, reason != .logout, stage.app.next() % 2 == 0 {
        stage.schedule(
          .call(.login(client: c, expiresIn: 3600)),
          after: .milliseconds(1000 + stage.app.next() % 1000))
      }
    case .tokenExpired:
      stage.stats[.tokenExpired] += 1
      stage.note("client \(c): token-expired")
      stage.schedule(.call(.renew(client: c)), after: .milliseconds(20 + stage.app.next() % 300))
    case .memberJoined(let channel, let user), .memberLeft(let channel, let user):
      let joined = { if case .memberJoined = notification { true } else { false } }()
      try memberEvent(joined: joined, channel, user, in: step, of: c, &stage)
    default: break
    }
  }

  /// A member event client `c` took: never about its own user; for one (channel, user),
  /// joined and left alternate within one membership of the client.
  mutating func memberEvent(
    joined: Bool, _ channel: ArraySlice<UInt8>, _ user: ArraySlice<UInt8>,
    in step: LoginClient.Step, of c: Int, _ stage: inout Stage
  ) throws(Violation) {
    stage.stats[.memberEvents] += 1
    taken[c] &+= 1
    let sequence = taken[c]
    let userText = String(decoding: user, as: UTF8.self)
    stage.note(
      "client \(c): member \(joined ? "joined" : "left") "
        + "\(userText) in \(String(decoding: channel, as: UTF8.self)) (#\(sequence))")
    try stage.expect(
      !user.elementsEqual(scenario.user(of: c).bytes), "member events", c,
      "an event about its own user")
    let key = MemberKey(channel: Array(channel), user: Array(user))
    defer { lastEvent[c][key] = (joined, sequence) }
    // Only events of the server session the world's boundaries describe.
    let side = stage.world.sides[c]
    guard step.generation == side.generation, side.held else {
      stage.stats[.uncheckedEvents] += 1
      return
    }
    guard let previous = lastEvent[c][key] else { return }
    stage.stats[.memberEventAlternations] += 1
    guard previous.joined == joined else { return }
    let name = try! ChannelName(validating: Array(channel))
    let rejoined = (side.joinedAtEvent[name] ?? []).contains {
      previous.sequence <= $0 && $0 < sequence
    }
    if !rejoined {
      throw stage.violation(
        "member events", c,
        "\(joined ? "joined" : "left") twice in a row for \(userText) "
          + "(#\(previous.sequence), #\(sequence))")
    }
  }

  // MARK: - The closing phase

  /// Client `c` took every event the server sent it in this server session, is in the
  /// channels the server has for it with nothing pending, and its view of their members is
  /// the server's.
  public mutating func agree(_ c: Int, _ stage: inout Stage) throws(Violation) {
    let session = stage.world.clients[c].session
    let side = stage.world.sides[c]
    if side.acceptedGeneration == side.generation, taken[c] != side.eventsSent {
      throw stage.violation(
        "member events", c, "took \(taken[c]) events, the server sent \(side.eventsSent)")
    }
    if Set(side.channels) != Set(session.joinedChannels) || session.pendingChannelOperations != 0 {
      throw stage.violation(
        "channels", c,
        "client in \(session.joinedChannels.map(\.bytes)) (\(session.pendingChannelOperations) pending), "
          + "server \(side.channels.map(\.bytes))")
    }
    for channel in side.channels { try agree(c, in: channel, since: side, &stage) }
  }

  /// What client `c` last heard of each member of `channel` agrees with the server's roster.
  func agree(
    _ c: Int, in channel: ChannelName, since side: ServerSide, _ stage: inout Stage
  )
    throws(Violation)
  {
    let roster = Set(stage.world.server.loginMembers(of: channel).map(\.bytes))
    let since = side.joinedAtEvent[channel]?.last ?? 0
    for (key, last) in lastEvent[c] where key.channel == channel.bytes && last.sequence > since {
      stage.stats[.endAgreements] += 1
      if roster.contains(key.user) != last.joined {
        throw stage.violation(
          "member view", c,
          "last heard \(String(decoding: key.user, as: UTF8.self)) "
            + "\(last.joined ? "joined" : "left") in \(String(decoding: channel.bytes, as: UTF8.self)), "
            + "roster \(roster.map { String(decoding: $0, as: UTF8.self) }.sorted())")
      }
    }
  }
}
