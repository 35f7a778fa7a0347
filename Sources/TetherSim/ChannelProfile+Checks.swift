// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// The channel profile's checker. Its invariants, each against what the clients sent, were
/// told and received (never the session's private fields), after every step:
/// 1. every state change is a (state, reason) pair docs/BEHAVIOUR.md allows, from a state
///    its reason may follow, never the same pair twice in a row; the session's state is
///    the last one reported;
/// 2. INTERRUPTED comes at exactly last data + interrupted_after, LOST and connection-lost
///    at exactly the effort's start + lost_after, JOIN_FAILED at exactly its start +
///    give_up_after; none of them is ever overdue, and a JOIN follows the previous one by
///    at most the backoff cap;
/// 3. a client whose link is clean (both directions up, no loss) rejoins within the
///    backoff cap plus a round trip of the later of its effort's start and the heal;
/// 4. DROPPED only when the last sign of life the server relayed is remote_offline_after
///    old; at most once per silence (a second needs the server to have heard the member
///    since the first verdict's silence began); and always, by last heard +
///    remote_offline_after + one latency, at a peer that was CONNECTED on a clean link for
///    the whole time;
/// 5. a CONNECTED device on a clean link is seen present and not interrupted by every
///    clean CONNECTED peer of its channel within one heartbeat, one presence interval and a
///    round trip; a device that goes INTERRUPTED because its uplink failed (its last hearing
///    was answered over a clean downlink) and is not heard again for a heartbeat is
///    reported interrupted by those peers within one heartbeat of its own INTERRUPTED;
/// 6. nothing after leave but a new join's CONNECTING; no datagram from a DISCONNECTED or
///    FAILED session; member events consistent (no joined twice, no offline of a stranger);
/// 7. join_channel is refused exactly when not DISCONNECTED, renew_token exactly when
///    DISCONNECTED or FAILED for another reason than an expired token;
/// 8. in the closing phase, every client neither DISCONNECTED nor FAILED is CONNECTED at a
///    session the server holds, and sees exactly the server's other members of its
///    channel, none interrupted.
public struct ChannelProfile: SimProfile {
  public typealias Stage = TetherSim.Stage<ChannelProfile>
  public typealias Client = Harness
  var models: [ClientModel]
  var cookies: [UInt64?]
  var effortStart: [Instant?]
  /// How much of each client's trace was checked.
  var traced: [Int]
  /// When the server last heard each client.
  var serverHeard: [Instant?]
  /// Per observer and member: the silence (its start) whose DROPPED was last counted.
  var demanded: [[Instant?]]
  /// A device went INTERRUPTED at `at` and its peer `observer` must say so within one
  /// heartbeat: checked once that heartbeat has passed.
  var pendingAgreements: [Agreement] = []
  let config: ChannelConfig
  let scenario: Scenario<ChannelProfile>

  /// `at`: when the device went INTERRUPTED; `heard`: when the server had last heard it
  /// then; `since`: since when the observer has been CONNECTED on a clean link.
  typealias Agreement = (device: Int, observer: Int, at: Instant, heard: Instant, since: Instant)

  public init(_ scenario: Scenario<ChannelProfile>) {
    let n = scenario.clientCount
    self.scenario = scenario
    config = scenario.config
    models = Array(repeating: ClientModel(), count: n)
    cookies = Array(repeating: nil, count: n)
    effortStart = Array(repeating: nil, count: n)
    traced = Array(repeating: 0, count: n)
    serverHeard = Array(repeating: nil, count: n)
    demanded = Array(repeating: Array(repeating: nil, count: n), count: n)
  }

  // MARK: - The app's calls

  public mutating func perform(_ call: Call, on stage: inout Stage) throws(Violation) {
    switch call {
    case .join(let c, let expiresIn):
      stage.stats[.joins] += 1
      if expiresIn != nil { stage.stats[.expiringTokens] += 1 }
      let uid = Self.uid(of: c)
      let channel = scenario.channel(of: c)
      let token = stage.world.token(channel: channel, uid: uid, expiresIn: expiresIn ?? 3600)
      let wasIdle = models[c].state == .disconnected
      let refused = (try? stage.world.join(c, channel: channel, uid: uid, token: token)) == nil
      try stage.expect(
        refused != wasIdle, "call rules", c,
        "join_channel in \(models[c].state) refused: \(refused)")
    case .leave(let c):
      stage.stats[.leaves] += 1
      stage.world.leave(c)
    case .renew(let c):
      stage.stats[.renewals] += 1
      let token = stage.world.token(
        channel: scenario.channel(of: c), uid: Self.uid(of: c), expiresIn: 3600)
      let refused = (try? stage.world.renew(c, token)) == nil
      try stage.expect(
        refused != mayRenew(c), "call rules", c,
        "renew_token in \(models[c].state) refused: \(refused)")
    case .networkChanged(let c, let byUser):
      stage.stats[.networkChanges] += 1
      stage.world.act(c) { s, now, out in s.networkChanged(byUser: byUser, now: now, into: &out) }
    case .kick(let c, let ban):
      stage.stats[.adminKicks] += 1
      stage.world.kick(uid: Self.uid(of: c), in: scenario.channel(of: c), banSeconds: ban)
    }
  }

  func mayRenew(_ i: Int) -> Bool {
    models[i].state != .disconnected
      && (models[i].state != .failed || models[i].reason == .tokenExpired)
  }

  public func freshTokens(_ stage: Stage) -> [Call] {
    models.indices.filter(mayRenew).map { .renew(client: $0) }
  }

  public func goodbyes(_ stage: Stage) -> [Call] {
    models.indices.filter { models[$0].state != .disconnected }.map { .leave(client: $0) }
  }

  // MARK: - After every step

  public mutating func observe(_ stage: inout Stage) throws(Violation) {
    for d in stage.world.deliveries { try received(d, &stage) }
    for i in 0..<scenario.clientCount {
      let items = stage.world.clients[i].trace
      while traced[i] < items.count {
        let item = items[traced[i]]
        traced[i] += 1
        switch item {
        case .sent(let packet): try sent(packet, by: i, &stage)
        case .notified(let n): try notified(n, to: i, &stage)
        }
      }
    }
    for i in 0..<scenario.clientCount { try checkDeadlines(i, &stage) }
    try checkPeers(&stage)
    if !pendingAgreements.isEmpty { try checkPendingAgreements(&stage) }
  }

  mutating func received(_ d: SecureWorld<Harness>.Delivery, _ stage: inout Stage) throws(Violation)
  {
    let i = d.client
    if d.toServer {
      serverHeard[i] = d.at
      return
    }
    guard let packet = d.packet, packet.cookie == cookies[i], d.state != .disconnected else {
      return
    }
    try stage.expect(
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
      let own = Self.uid(of: i)
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

  mutating func sent(_ packet: Packet, by i: Int, _ stage: inout Stage) throws(Violation) {
    let m = models[i]
    try stage.expect(
      !m.left, "nothing after leave", i, "sent \(packet.message) after on_leave_channel")
    try stage.expect(
      m.state != .disconnected && m.state != .failed, "idle sessions are silent", i,
      "sent \(packet.message) while \(m.state)")
    // A channel client's message, that fits a datagram, under its join's cookie.
    let size = packet.encoded.count
    switch packet.message {
    case .join, .heartbeat, .leave, .renewToken:
      try stage.expect(
        size <= Packet.maximumSize && (packet.message.opensSession || packet.cookie == cookies[i]),
        "datagrams", i, "sent \(size) bytes under cookie \(packet.cookie): \(packet.message)")
    default: throw stage.violation("datagrams", i, "sent \(packet.message)")
    }
    switch packet.message {
    case .join:
      try stage.expect(m.attempting, "JOINs only while (re)joining", i, "JOIN while \(m.state)")
      cookies[i] = packet.cookie
      models[i].lastJoinAt = stage.now
    case .renewToken:
      if m.state == .connected { models[i].renewalPending = true }
    case .heartbeat:
      try stage.expect(m.state == .connected, "heartbeats only while CONNECTED", i, "in \(m.state)")
    default:
      break
    }
  }

  mutating func notified(
    _ n: ChannelNotification, to i: Int, _ stage: inout Stage
  ) throws(Violation) {
    var m = models[i]
    defer { models[i] = m }
    let now = stage.now
    if m.left {
      try stage.expect(
        n == .connectionStateChanged(.connecting, .connecting), "nothing after leave", i, "\(n)")
    }
    switch n {
    case .connectionStateChanged(let s, let r):
      stage.note("client \(i): \(s.name) / \(r.name)")
      try stage.expect(r.state == s, "allowed pair", i, "\(s.name)/\(r.name)")
      try stage.expect(
        m.reason.map { !(s == m.state && r == $0) } ?? true, "no pair twice", i,
        "\(s.name)/\(r.name) again")
      try stage.expect(
        AllowedTransitions.allows(from: m.state, r), "allowed transition", i,
        "\(r.name) from \(m.state.name)")
      if r == .joinSuccess || r == .rejoinSuccess {
        try stage.expect(
          (r == .rejoinSuccess) == m.everAccepted, "join vs rejoin success", i,
          "\(r.name) with everAccepted \(m.everAccepted)")
      }
      switch r {
      case .interrupted:
        try stage.expect(
          now == m.lastData + config.interruptedAfter, "deadline at its instant", i,
          "INTERRUPTED, last data at \(SimClock.text(m.lastData))")
        expectPeersToAgree(interrupted: i, lastData: m.lastData, stage)
      case .lost:
        try stage.expect(
          m.outageSince.map { now == $0 + config.lostAfter } ?? false, "deadline at its instant",
          i, "LOST, effort since \(m.outageSince.map(SimClock.text) ?? "-")")
      case .joinFailed:
        try stage.expect(
          m.outageSince.map { now == $0 + config.giveUpAfter } ?? false,
          "deadline at its instant", i,
          "JOIN_FAILED, effort since \(m.outageSince.map(SimClock.text) ?? "-")")
      default: break
      }
      changeState(&m, to: s, r, client: i, &stage)
    case .connectionLost:
      stage.note("client \(i): connection lost")
      try stage.expect(
        m.attempting && !m.lostReported
          && m.outageSince.map { now == $0 + config.lostAfter } ?? false,
        "deadline at its instant", i, "connection-lost in \(m.state)")
      m.lostReported = true
    case .joinChannelSuccess, .rejoinChannelSuccess:
      try stage.expect(m.state == .connected, "callback order", i, "\(n) in \(m.state)")
    case .userJoined(let uid, _):
      stage.note("client \(i): user joined \(uid)")
      try stage.expect(
        m.state == .connected && m.view[uid] == nil, "member events", i, "joined \(uid) twice")
      m.view[uid] = false
    case .userOffline(let uid, let reason):
      stage.note("client \(i): user offline \(uid) \(reason.name)")
      try stage.expect(
        m.state == .connected && m.view[uid] != nil, "member events", i, "offline of \(uid)")
      m.view[uid] = nil
      m.offlineAt[uid] = now
      guard reason == .dropped else { break }
      let evidence = m.evidence[uid]
      try stage.expect(
        evidence.map { now.since($0) >= config.remoteOfflineAfter } ?? false,
        "DROPPED never for a shorter silence", i,
        "DROPPED \(uid); last heard (relayed) at \(evidence.map(SimClock.text) ?? "never")")
      // A member's uid is its client's index + 1.
      if let first = m.droppedAt[uid], serverHeard.indices.contains(Int(uid) - 1) {
        let heard = serverHeard[Int(uid) - 1]
        try stage.expect(
          heard.map { $0 > first - config.remoteOfflineAfter } ?? false,
          "DROPPED once per silence", i,
          "DROPPED \(uid) again; first at \(SimClock.text(first)), server last heard it at "
            + "\(heard.map(SimClock.text) ?? "never")")
      }
      m.droppedAt[uid] = now
    case .remoteMemberInterrupted(let uid):
      stage.note("client \(i): member \(uid) interrupted")
      try stage.expect(m.view[uid] == false, "member events", i, "interrupted \(uid)")
      m.view[uid] = true
      m.interruptedAt[uid, default: []].append(now)
    case .remoteMemberResumed(let uid):
      stage.note("client \(i): member \(uid) resumed")
      try stage.expect(m.view[uid] == true, "member events", i, "resumed \(uid)")
      m.view[uid] = false
    case .tokenPrivilegeWillExpire, .requestToken:
      stage.note("client \(i): \(n)")
      try stage.expect(m.state != .disconnected, "token events", i, "\(n) while DISCONNECTED")
      if stage.app.next() % 3 != 0 {
        stage.schedule(.call(.renew(client: i)), after: .milliseconds(stage.app.next() % 300))
      }
    case .joinAttempt:
      try stage.expect(m.attempting, "attempts only while (re)joining", i, "in \(m.state)")
    case .leaveChannel:
      stage.note("client \(i): left")
      try stage.expect(
        m.state == .disconnected && m.reason == .leaveChannel, "callback order", i,
        "on_leave_channel after \(m.state)")
      m.left = true
    }
  }

  /// The model follows a state change the client reported.
  mutating func changeState(
    _ m: inout ClientModel, to s: ConnectionState, _ r: ConnectionChangedReason, client i: Int,
    _ stage: inout Stage
  ) {
    let now = stage.now
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
      if s == .failed && stage.app.next() % 2 == 0 {
        stage.schedule(.call(.leave(client: i)), after: .milliseconds(stage.app.next() % 200))
        stage.schedule(
          .call(.join(client: i, expiresIn: nil)),
          after: .milliseconds(200 + stage.app.next() % 500))
      }
    }
  }

  /// Nothing overdue, and a clean link rejoins within the backoff bound.
  mutating func checkDeadlines(_ i: Int, _ stage: inout Stage) throws(Violation) {
    let m = models[i]
    let now = stage.now
    let state = stage.world.clients[i].state
    try stage.expect(
      state == m.state, "state is the last reported", i, "session \(state), reported \(m.state)")
    switch m.state {
    case .connected:
      try stage.expect(
        now <= m.lastData + config.interruptedAfter, "deadline at its instant", i,
        "still CONNECTED, last data at \(SimClock.text(m.lastData))")
    case .connecting, .reconnecting:
      guard let since = m.outageSince, let start = effortStart[i] else {
        throw stage.violation("effort", i, "attempting with no effort")
      }
      try stage.expect(
        now <= since + config.giveUpAfter, "nothing stuck past give-up", i,
        "still \(m.state), effort since \(SimClock.text(since))")
      try stage.expect(
        m.lostReported || now <= since + config.lostAfter, "deadline at its instant", i,
        "no connection-lost, effort since \(SimClock.text(since))")
      try stage.expect(
        m.lastJoinAt.map { now <= $0 + config.retry.cap } ?? false, "retries within the cap", i,
        "last JOIN at \(m.lastJoinAt.map(SimClock.text) ?? "never")")
      if let clean = stage.cleanSince[i], clean <= now {
        let from = max(clean, start)
        // A retry, then version 2's two round trips (INIT, RESPONSE; CONFIRM, ACCEPT:
        // docs/PROTOCOL.md §12.2). An edge that restarts after its RESPONSE drops the CONFIRM
        // (another epoch, §12.6), which the device repeats until the ticket's lifetime has
        // passed before it sends a new INIT (§12.5): one ticket lifetime more.
        let roundTrip = scenario.cleanDelay(i) + scenario.cleanDelay(i)
        var bound = config.retry.cap + roundTrip + roundTrip
        if let restart = stage.world.lastRestart, restart >= start {
          bound = bound + stage.world.server.config.ticketLifetime
        }
        stage.stats[.healBounds] += 1
        try stage.expect(
          now <= from + bound, "a healed link rejoins within the backoff bound", i,
          "still \(m.state); clean since \(SimClock.text(clean)), effort since "
            + "\(SimClock.text(start)), bound \(SimClock.text(.zero + bound))")
      }
    case .disconnected, .failed:
      try stage.expect(
        stage.world.clients[i].nextDeadline == nil, "idle sessions schedule nothing", i,
        "\(m.state) with a deadline")
    }
  }

  /// Device `a` went INTERRUPTED now. If the server's last hearing of it was answered over
  /// a clean downlink (so its last data is that answer: the uplink is what failed), every
  /// peer CONNECTED on a clean link since before that hearing, and seeing it present, must
  /// report it interrupted within one heartbeat of now.
  mutating func expectPeersToAgree(interrupted a: Int, lastData: Instant, _ stage: Stage) {
    guard let heard = serverHeard[a], lastData >= heard, let down = stage.downCleanSince[a],
      down <= heard
    else { return }
    let uid = Self.uid(of: a)
    for b in 0..<scenario.clientCount where b != a && scenario.role[b] == scenario.role[a] {
      guard let sinceB = cleanConnected(b, stage), sinceB <= heard, models[b].view[uid] != nil
      else { continue }
      pendingAgreements.append(
        (device: a, observer: b, at: stage.now, heard: heard, since: sinceB))
    }
  }

  mutating func checkPendingAgreements(_ stage: inout Stage) throws(Violation) {
    let hb = config.heartbeatInterval
    var kept: [Agreement] = []
    for p in pendingAgreements {
      guard stage.now > p.at + hb else {
        kept.append(p)
        continue
      }
      // The peer must have stayed as it was, and the member must not have left, nor been
      // heard again meanwhile (a rejoin the server heard at once: the peer may learn that
      // the member is back before its silence is long enough to call it interrupted).
      let uid = Self.uid(of: p.device)
      guard cleanConnected(p.observer, stage) == p.since, serverHeard[p.device] == p.heard,
        models[p.observer].offlineAt[uid].map({ $0 < p.at - hb }) ?? true
      else { continue }
      stage.stats[.interruptAgreements] += 1
      let reports = models[p.observer].interruptedAt[uid] ?? []
      try stage.expect(
        reports.contains { $0 + hb >= p.at && $0 <= p.at + hb }, "peers agree within one heartbeat",
        p.observer,
        "device \(p.device) INTERRUPTED at \(SimClock.text(p.at)); reported interrupted at "
          + "\(reports.map(SimClock.text))")
    }
    pendingAgreements = kept
  }

  /// Since when `i` has been CONNECTED on a clean link, if it is now.
  func cleanConnected(_ i: Int, _ stage: Stage) -> Instant? {
    guard let connected = models[i].connectedSince, let clean = stage.cleanSince[i],
      clean <= stage.now
    else { return nil }
    return max(connected, clean)
  }

  /// DROPPED when it must be, and peers that see a connected device.
  mutating func checkPeers(_ stage: inout Stage) throws(Violation) {
    let n = scenario.clientCount
    let now = stage.now
    for b in 0..<n {
      guard let sinceB = cleanConnected(b, stage) else { continue }
      for a in 0..<n where a != b && scenario.role[a] == scenario.role[b] {
        let uid = Self.uid(of: a)
        // A member silent at the server for remote_offline_after is DROPPED.
        if let heard = serverHeard[a], sinceB <= heard,
          now > heard + config.remoteOfflineAfter + scenario.cleanDelay(b) + .milliseconds(1)
        {
          let dropped = models[b].droppedAt[uid].map { $0 >= heard } ?? false
          if dropped && demanded[b][a] != heard {
            // Counted once per silence: the demand held and was met.
            demanded[b][a] = heard
            stage.stats[.dropDemands] += 1
          }
          if models[b].view[uid] != nil {
            try stage.expect(
              dropped, "DROPPED when silent longer than remote_offline_after", b,
              "\(uid) last heard by the server at \(SimClock.text(heard)), still present")
          }
        }
        // A connected device is seen present and not interrupted.
        if let sinceA = cleanConnected(a, stage), let cookie = cookies[a],
          stage.world.server.session(cookie: stage.world.serverKey(cookie, of: a)) != nil
        {
          let bound =
            config.heartbeatInterval + stage.world.server.config.presenceInterval
            + scenario.cleanDelay(a) + scenario.cleanDelay(a) + scenario.cleanDelay(b)
            + scenario.cleanDelay(b)
          if now > max(sinceA, sinceB) + bound {
            stage.stats[.peerAgreements] += 1
            try stage.expect(
              models[b].view[uid] == false, "peers agree within one heartbeat", b,
              "\(uid) CONNECTED since \(SimClock.text(sinceA)) but seen "
                + (models[b].view[uid] == nil ? "absent" : "interrupted"))
          }
        }
      }
    }
  }

  // MARK: - The closing phase

  /// Client `i` sees exactly the server's other members of its channel, none interrupted.
  public mutating func agree(_ i: Int, _ stage: inout Stage) throws(Violation) {
    let own = Self.uid(of: i)
    let roster = stage.world.sides[i].channels.flatMap { stage.world.server.members(of: $0) }
    try stage.expect(
      Set(models[i].view.keys) == Set(roster.filter { $0 != own })
        && !models[i].view.values.contains(true), "member view", i,
      "sees \(models[i].view), server has \(roster)")
  }
}

/// What the checker knows of one client, rebuilt from what it sent, what it was told and
/// what reached it; never read from the session's private fields.
struct ClientModel {
  var state: ConnectionState = .disconnected
  var reason: ConnectionChangedReason?
  /// on_leave_channel came: nothing more until the next CONNECTING.
  var left = false
  /// The last answer that proves the server heard this client (accept, heartbeat ack,
  /// token renewed, session unknown), or the join call.
  var lastData: Instant = .zero
  /// The (re)join effort's clock, while CONNECTING or RECONNECTING.
  var outageSince: Instant?
  var lostReported = false
  var lastJoinAt: Instant?
  /// A RENEW_TOKEN went out while CONNECTED and was not answered.
  var renewalPending = false
  var everAccepted = false
  var connectedSince: Instant?
  /// Remote members as the app was told: uid → interrupted.
  var view: [UInt32: Bool] = [:]
  /// uid → the latest "last heard" the server relayed to this client (arrival − silence).
  var evidence: [UInt32: Instant] = [:]
  /// uid → when this client last reported it DROPPED (this membership).
  var droppedAt: [UInt32: Instant] = [:]
  /// uid → when this client reported it offline (QUIT or DROPPED), the latest.
  var offlineAt: [UInt32: Instant] = [:]
  /// uid → when this client reported it interrupted, each time.
  var interruptedAt: [UInt32: [Instant]] = [:]

  var attempting: Bool { state == .connecting || state == .reconnecting }

  mutating func forgetMembers() {
    view.removeAll()
    evidence.removeAll()
    droppedAt.removeAll()
    offlineAt.removeAll()
    interruptedAt.removeAll()
  }
}
