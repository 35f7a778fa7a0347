// SPDX-License-Identifier: Apache-2.0
// MARK: - Deadlines

extension LoginSession {
  /// As ``ChannelSession/advance(to:into:)``.
  public mutating func advance(to now: Instant, into output: inout LoginOutput) {
    let now = link.tick(now)
    for _ in 0..<64 {
      guard let due = link.earliestDue(own: nil), due.at <= now else { return }
      fire(due.kind, due: due.at, now: now, into: &output)
    }
  }

  /// As ``ChannelSession/nextDeadlineWindow``: nil while DISCONNECTED or ABORTED.
  public var nextDeadlineWindow: DeadlineWindow? { link.window(own: nil) }

  /// As ``ChannelSession/nextDeadline``.
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
          message: .loginHeartbeat(
            sequence: sequence, session: channels.serverSession ?? 0,
            eventsReceived: channels.eventsReceived)))
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
