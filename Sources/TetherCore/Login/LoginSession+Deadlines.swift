// MARK: - Deadlines

/// Everything a login session waits for. On a tie the earlier case fires first.
enum LoginDeadline: CaseIterable, Sendable {
  case loginTimeout, tokenExpiry, interrupted, retry, heartbeat
}

extension LoginSession {
  /// Does everything due by `now`, in the order it fell due (calling it early, or late,
  /// is harmless).
  public mutating func advance(to now: Instant, into output: inout LoginOutput) {
    runDue(tick(now), into: &output)
  }

  /// Fires due deadlines, earliest first; each firing moves its deadline past `now` or
  /// removes it.
  mutating func runDue(_ now: Instant, into output: inout LoginOutput) {
    for _ in 0..<64 {
      guard let due = earliestDue(), due.at <= now else { return }
      fire(due.kind, due: due.at, now: now, into: &output)
    }
  }

  /// When the driver must next call ``advance(to:into:)``: not before the window's start
  /// and by its end; nil when nothing is scheduled (DISCONNECTED, ABORTED). Only the
  /// heartbeat has slack, 1/16 of its interval, as in the channel profile.
  public var nextDeadlineWindow: DeadlineWindow? {
    var window: DeadlineWindow?
    for kind in LoginDeadline.allCases {
      guard let at = dueTime(of: kind) else { continue }
      let slack =
        kind == .heartbeat
        ? Interval(nanoseconds: config.heartbeatInterval.nanoseconds / 16) : .zero
      let own = DeadlineWindow(start: at, slack: slack)
      window = window.map { $0.merged(with: own) } ?? own
    }
    return window
  }

  /// The earliest instant at which ``advance(to:into:)`` has something to do.
  public var nextDeadline: Instant? { earliestDue()?.at }

  func earliestDue() -> (kind: LoginDeadline, at: Instant)? {
    var best: (kind: LoginDeadline, at: Instant)?
    for kind in LoginDeadline.allCases {
      if let at = dueTime(of: kind), best.map({ at < $0.at }) ?? true { best = (kind, at) }
    }
    return best
  }

  /// When `kind` falls due, or nil if it does not apply now; derived from the recorded
  /// times each time it is asked.
  func dueTime(of kind: LoginDeadline) -> Instant? {
    switch (kind, link) {
    case (.loginTimeout, .attempting(let attempts)):
      // Only the first login times out; reconnecting goes on for ever.
      return state == .connecting ? attempts.outageSince + config.loginTimeout : nil
    case (.tokenExpiry, .attempting):
      // While CONNECTED the server judges the token; while reconnecting nobody else can.
      guard state == .reconnecting, account?.tokenExpiryReported == false else { return nil }
      return account?.tokenExpiresAt
    case (.interrupted, .live):
      return lastData + config.interruptedAfter
    case (.retry, .attempting(let attempts)):
      return attempts.nextAttemptAt
    case (.heartbeat, .live(let next)):
      return next
    default:
      return nil
    }
  }

  mutating func fire(
    _ kind: LoginDeadline, due: Instant, now: Instant, into output: inout LoginOutput
  ) {
    switch kind {
    case .loginTimeout:
      reportLoginResult(.timeout, into: &output)
      end(.loginTimeout, into: &output)
    case .tokenExpiry:
      reportTokenExpired(into: &output)
    case .interrupted:
      transition(.interrupted, into: &output)
      startAttempts(since: lastData, now: now, into: &output)
    case .retry:
      sendLoginAttempt(now: now, into: &output)
    case .heartbeat:
      sendHeartbeat(due: due, now: now, into: &output)
    }
  }

  private mutating func sendHeartbeat(due: Instant, now: Instant, into output: inout LoginOutput) {
    account?.heartbeatSequence &+= 1
    guard let cookie = account?.cookie, let sequence = account?.heartbeatSequence else { return }
    output.send(
      Packet(
        cookie: cookie,
        message: .loginHeartbeat(sequence: sequence, eventsReceived: channels.eventsReceived)))
    sendPendingOperations(limit: LoginChannels.resentPerHeartbeat, into: &output)
    if account?.renewalFallback != nil, let token = account?.token {
      output.send(Packet(cookie: cookie, message: .renewToken(token)))
    }
    let next = due + config.heartbeatInterval
    link = .live(nextHeartbeatAt: next > now ? next : now + config.heartbeatInterval)
  }
}
