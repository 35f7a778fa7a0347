// SPDX-License-Identifier: Apache-2.0
// MARK: - Deadlines

extension ChannelSession {
  /// The channel's own deadline: the next verdict on a remote member. Inlined, so a caller
  /// holding the session in place reads it there (a call copies the whole session).
  @_spi(Link) public var ownDue: Instant? {
    @inline(__always) get { members.nextDeadline(horizon: memberHorizon) }
  }

  @_spi(Link) public mutating func fire(
    _ kind: LinkDeadline, due: Instant, now: Instant, into output: inout ChannelOutput
  ) {
    switch kind {
    case .tokenWillExpire:
      link.tokenWarned = true
      output.notify(.tokenPrivilegeWillExpire(link.token))
    case .tokenExpiry:
      guard link.renewal != nil else {
        expireToken(into: &output)
        return
      }
      // The old token ran out while its successor waits for a server (in the next JOIN, or
      // in a RENEW_TOKEN after an accept that may have taken the old one): say so, and go
      // on; if the server held the old one, its TOKEN_EXPIRED ends the session.
      link.tokenExpiresAt = nil
      output.notify(.requestToken)
    case .giveUp:
      fail(.joinFailed, into: &output)
    case .lost:
      link.reportLost()
      // A first join that never got through stays CONNECTING (docs/BEHAVIOUR.md §1.4: it
      // retries, connection-lost at 10 s); only a joined session goes LOST.
      if state == .reconnecting { transition(.lost, into: &output) }
      output.notify(.connectionLost)
    case .interrupted:
      transition(.interrupted, into: &output)
      startAttempts(outageSince: link.lastData, now: now, into: &output)
    case .retry:
      sendJoinAttempt(now: now, into: &output)
    case .heartbeat:
      let sequence = link.beat(due: due, now: now)
      output.send(Packet(cookie: link.cookie, message: .heartbeat(sequence: sequence)))
      if link.renewal != nil {
        output.sendRenewal(cookie: link.cookie, token: link.token)
      }
    case .own:
      members.fireDue(at: min(now, memberHorizon), into: &output)
    }
  }
}
