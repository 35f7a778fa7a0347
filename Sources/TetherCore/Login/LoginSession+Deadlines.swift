// MARK: - Deadlines

/// Everything a login session waits for. On a tie the earlier case fires first.
enum LoginDeadline: CaseIterable, Sendable {
  case loginTimeout, tokenExpiry, interrupted, retry, heartbeat

  /// Every case, in order. A stored array, read in place: iterating `allCases` costs code to
  /// retain and release the array it returns.
  static let all: [LoginDeadline] = [.loginTimeout, .tokenExpiry, .interrupted, .retry, .heartbeat]
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
    guard let due = earliestDue() else { return nil }
    var window = DeadlineWindow(start: due.at)
    window.end = due.latest
    return window
  }

  /// The earliest instant at which ``advance(to:into:)`` has something to do.
  public var nextDeadline: Instant? { earliestDue()?.at }

  /// The deadline that falls due first (the earlier case on a tie), and `latest`, when the
  /// driver must have called at the latest: the earliest due time, the heartbeat's with its
  /// slack. One pass serves both ``runDue(_:into:)`` and ``nextDeadlineWindow``.
  @inline(never)  // runDue and nextDeadlineWindow share one copy
  func earliestDue() -> (kind: LoginDeadline, at: Instant, latest: Instant)? {
    var best: (kind: LoginDeadline, at: Instant, latest: Instant)?
    for kind in LoginDeadline.all {
      guard let at = dueTime(of: kind) else { continue }
      let latest =
        kind == .heartbeat
        ? at + Interval(nanoseconds: config.heartbeatInterval.nanoseconds / 16) : at
      var next = best ?? (kind, at, latest)
      if at < next.at { (next.kind, next.at) = (kind, at) }
      next.latest = min(next.latest, latest)
      best = next
    }
    return best
  }

  /// When `kind` falls due, or nil if it does not apply now; derived from the recorded
  /// times each time it is asked.
  func dueTime(of kind: LoginDeadline) -> Instant? {
    // The state is matched here, not compared with `==`: the comparison is generic code
    // the optimizer takes for one that may write anywhere, and then a class holding the
    // session copies all of it around every `nextDeadlineWindow`.
    switch (kind, link, state) {
    case (.loginTimeout, .attempting(let attempts), .connecting):
      // Only the first login times out; reconnecting goes on for ever.
      return attempts.outageSince + config.loginTimeout
    case (.tokenExpiry, .attempting, .reconnecting):
      // While CONNECTED the server judges the token; while reconnecting nobody else can.
      guard account?.tokenExpiryReported == false else { return nil }
      return account?.tokenExpiresAt
    case (.interrupted, .live, _):
      return lastData + config.interruptedAfter
    case (.retry, .attempting(let attempts), _):
      return attempts.nextAttemptAt
    case (.heartbeat, .live(let next), _):
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
