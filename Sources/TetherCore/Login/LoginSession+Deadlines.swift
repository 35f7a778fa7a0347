// MARK: - Deadlines

extension LoginSession {
  /// Does everything due by `now`, earliest first (calling it early, or late, is
  /// harmless), as every entry point does before it returns.
  public mutating func advance(to now: Instant, into output: inout LoginOutput) {
    let now = link.tick(now)
    for _ in 0..<LinkCore.dueBound {
      guard let due = link.due(by: now, own: nil) else { return }
      fire(due.kind, due: due.at, now: now, into: &output)
    }
  }

  /// When the driver must next call ``advance(to:into:)``: not before the window's start
  /// and by its end; nil when nothing is scheduled (DISCONNECTED, ABORTED). Only the
  /// heartbeat has slack, 1/16 of its interval, as in the channel profile.
  public var nextDeadlineWindow: DeadlineWindow? { link.window(own: nil) }

  /// The earliest instant at which ``advance(to:into:)`` has something to do. After any
  /// entry point returns, it is later than the `now` that entry point was given.
  public var nextDeadline: Instant? { link.earliestDue(own: nil)?.at }

  mutating func fire(
    _ kind: LinkDeadline, due: Instant, now: Instant, into output: inout LoginOutput
  ) {
    switch kind {
    case .giveUp:
      // The first login's timeout (``LoginConfig/loginTimeout``).
      reportLoginResult(.timeout, into: &output)
      end(.loginTimeout, into: &output)
    case .tokenExpiry:
      reportTokenExpired(into: &output)
    case .interrupted:
      transition(.interrupted, into: &output)
      startAttempts(since: link.lastData, now: now, into: &output)
    case .retry:
      sendLoginAttempt(now: now, into: &output)
    case .heartbeat:
      let sequence = link.beat(due: due, now: now)
      output.send(
        Packet(
          cookie: link.cookie,
          message: .loginHeartbeat(sequence: sequence, eventsReceived: channels.eventsReceived)))
      sendPendingOperations(limit: LoginChannels.resentPerHeartbeat, into: &output)
      if link.renewal != nil {
        output.send(Packet(cookie: link.cookie, message: .renewToken(link.token)))
      }
    case .tokenWillExpire, .lost, .own:
      // Not the login profile's: its link never schedules them.
      break
    }
  }
}
