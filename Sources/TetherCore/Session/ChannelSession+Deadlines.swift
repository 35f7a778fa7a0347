// MARK: - Deadlines

/// Everything the session waits for. On a tie the earlier case fires first.
enum DeadlineKind: Sendable {
  case tokenWillExpire, tokenExpiry, giveUp, lost, interrupted, retry, heartbeat, members

  static let all: [DeadlineKind] = [
    .tokenWillExpire, .tokenExpiry, .giveUp, .lost, .interrupted, .retry, .heartbeat, .members,
  ]
}

extension ChannelSession {
  /// Does everything due by `now`, in the order it fell due: the driver calls this when
  /// ``nextDeadline`` passes (calling it early, or late, is harmless).
  public mutating func advance(to now: Instant, into output: inout ChannelOutput) {
    runDue(tick(now), into: &output)
  }

  /// Fires due deadlines, earliest first. Each firing moves its own deadline past `now`
  /// or removes it, so the loop ends; the bound is a belt for the braces.
  mutating func runDue(_ now: Instant, into output: inout ChannelOutput) {
    for _ in 0..<64 {
      guard let due = earliestDue(), due.at <= now else { return }
      fire(due.kind, due: due.at, now: now, into: &output)
    }
  }

  /// When the driver must next call ``advance(to:into:)``: not before the window's start
  /// and by its end (see ``DeadlineWindow``); nil when nothing is scheduled.
  public var nextDeadlineWindow: DeadlineWindow? {
    var window: DeadlineWindow?
    for kind in DeadlineKind.all {
      guard let at = dueTime(of: kind) else { continue }
      let own = DeadlineWindow(start: at, slack: slack(of: kind))
      window = window.map { $0.merged(with: own) } ?? own
    }
    return window
  }

  /// How late a deadline of `kind` may run. Only the heartbeat has slack: 1/16 of its
  /// interval (62.5 ms at 1 s), so the heartbeats of many engines on one loop go out in a
  /// few wake-ups a second instead of one each. Everything the app sees is exact.
  func slack(of kind: DeadlineKind) -> Interval {
    kind == .heartbeat ? Interval(nanoseconds: config.heartbeatInterval.nanoseconds / 16) : .zero
  }

  func earliestDue() -> (kind: DeadlineKind, at: Instant)? {
    var best: (kind: DeadlineKind, at: Instant)?
    for kind in DeadlineKind.all {
      if let at = dueTime(of: kind), best.map({ at < $0.at }) ?? true { best = (kind, at) }
    }
    return best
  }

  /// When `kind` falls due, or nil if it does not apply now. Derived from the recorded
  /// times each time it is asked: nothing is stored per deadline.
  @inline(never)  // one copy for runDue and nextDeadlineWindow, which both inlined it
  func dueTime(of kind: DeadlineKind) -> Instant? {
    // Read fields through the optional rather than binding a copy of the membership: this
    // runs for every deadline kind after every packet.
    guard membership != nil else { return nil }
    switch (kind, link) {
    case (.tokenWillExpire, .attempting), (.tokenWillExpire, .live):
      guard membership?.tokenWarned == false, let expiry = membership?.tokenExpiresAt else {
        return nil
      }
      return expiry - config.tokenWillExpireBefore
    case (.tokenExpiry, .attempting), (.tokenExpiry, .live):
      return membership?.tokenExpiresAt
    case (.giveUp, .attempting(let attempts)):
      return attempts.outageSince + config.giveUpAfter
    case (.lost, .attempting(let attempts)):
      return attempts.lostReported ? nil : attempts.outageSince + config.lostAfter
    case (.interrupted, .live):
      return lastData + config.interruptedAfter
    case (.retry, .attempting(let attempts)):
      return attempts.nextAttemptAt
    case (.heartbeat, .live(let next)):
      return next
    case (.members, .live):
      return members.nextDeadline(horizon: memberHorizon)
    default:
      return nil
    }
  }

  mutating func fire(
    _ kind: DeadlineKind, due: Instant, now: Instant, into output: inout ChannelOutput
  ) {
    switch kind {
    case .tokenWillExpire:
      membership?.tokenWarned = true
      if let token = membership?.token { output.notify(.tokenPrivilegeWillExpire(token)) }
    case .tokenExpiry:
      guard membership?.tokenUnconfirmed == true else {
        expireToken(into: &output)
        return
      }
      // The old token ran out while its successor waits for a server: say so, and go on.
      membership?.tokenExpiresAt = nil
      output.notify(.requestToken)
    case .giveUp:
      fail(.joinFailed, into: &output)
    case .lost:
      guard case .attempting(var attempts) = link else { return }
      attempts.lostReported = true
      link = .attempting(attempts)
      // A first join that never got through stays CONNECTING (docs/BEHAVIOUR.md §1.4: it
      // retries, connection-lost at 10 s); only a joined session goes LOST.
      if state == .reconnecting { transition(.lost, into: &output) }
      output.notify(.connectionLost)
    case .interrupted:
      transition(.interrupted, into: &output)
      startAttempts(outageSince: lastData, now: now, into: &output)
    case .retry:
      sendJoinAttempt(now: now, into: &output)
    case .heartbeat:
      sendHeartbeat(due: due, now: now, into: &output)
    case .members:
      members.fireDue(at: min(now, memberHorizon), into: &output)
    }
  }

  private mutating func sendHeartbeat(due: Instant, now: Instant, into output: inout ChannelOutput)
  {
    membership?.heartbeatSequence &+= 1
    guard let cookie = membership?.cookie, let sequence = membership?.heartbeatSequence else {
      return
    }
    output.send(Packet(cookie: cookie, message: .heartbeat(sequence: sequence)))
    if membership?.renewal != nil, let token = membership?.token {
      output.send(Packet(cookie: cookie, message: .renewToken(token)))
    }
    // Keep the beat on its grid; after a late wake-up, restart it from now.
    let next = due + config.heartbeatInterval
    link = .live(nextHeartbeatAt: next > now ? next : now + config.heartbeatInterval)
  }
}
