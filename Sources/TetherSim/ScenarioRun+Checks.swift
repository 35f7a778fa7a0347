import TetherCore
import TetherEdge

// MARK: - The invariants (listed on ScenarioRun), checked after every step

extension ScenarioRun {

  func violation(_ invariant: String, _ client: Int, _ detail: String) -> Violation {
    Violation(invariant: invariant, client: client, at: now, detail: detail)
  }

  func expect(
    _ ok: Bool, _ invariant: String, _ client: Int, _ detail: @autoclosure () -> String
  ) throws(Violation) {
    checks.value += 1
    if !ok { throw violation(invariant, client, detail()) }
  }

  func clientOf(uid: UInt32) -> Int? {
    let i = Int(uid) - 1
    return i >= 0 && i < scenario.clientCount ? i : nil
  }

  mutating func observe() throws(Violation) {
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

  mutating func received(_ d: SimWorld.Delivery) throws(Violation) {
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

  mutating func sent(_ packet: Packet, by i: Int) throws(Violation) {
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

  mutating func notified(_ n: ChannelNotification, to i: Int) throws(Violation) {
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
  mutating func checkDeadlines(_ i: Int) throws(Violation) {
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
  mutating func expectPeersToAgree(interrupted a: Int, lastData: Instant) {
    guard let heard = serverHeard[a], lastData >= heard, let down = downCleanSince[a],
      down <= heard
    else { return }
    let uid = scenario.uid(of: a)
    for b in 0..<scenario.clientCount where b != a && scenario.channels[b] == scenario.channels[a] {
      guard let sinceB = cleanConnected(b), sinceB <= heard, models[b].view[uid] != nil else {
        continue
      }
      pendingAgreements.append(
        Agreement(device: a, observer: b, at: now, heard: heard, since: sinceB))
    }
  }

  mutating func checkPendingAgreements() throws(Violation) {
    let hb = config.heartbeatInterval
    var kept: [Agreement] = []
    for p in pendingAgreements {
      guard now > p.at + hb else {
        kept.append(p)
        continue
      }
      // The peer must have stayed as it was, and the member must not have left, nor been
      // heard again meanwhile (a rejoin the server heard at once: the peer may learn that
      // the member is back before its silence is long enough to call it interrupted).
      let uid = scenario.uid(of: p.device)
      guard cleanConnected(p.observer) == p.since, serverHeard[p.device] == p.heard,
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
  func cleanConnected(_ i: Int) -> Instant? {
    guard let connected = models[i].connectedSince, let clean = cleanSince[i], clean <= now
    else { return nil }
    return max(connected, clean)
  }

  /// DROPPED when it must be, and peers that see a connected device.
  mutating func checkPeers() throws(Violation) {
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
