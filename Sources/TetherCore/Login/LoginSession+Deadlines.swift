// SPDX-License-Identifier: Apache-2.0
// MARK: - Deadlines

extension LoginSession {
  /// None: a login session has no deadline of its own.
  @_spi(Link) public var ownDue: Instant? { nil }

  @_spi(Link) public mutating func fire(
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
        output.sendRenewal(cookie: link.cookie, token: link.token)
      }
    case .tokenWillExpire, .lost, .own:
      // Not the login profile's: its link never schedules them.
      break
    }
  }
}
