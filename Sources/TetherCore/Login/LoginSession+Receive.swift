// SPDX-License-Identifier: Apache-2.0
// MARK: - Packets from the edge server

extension LoginSession: LinkSession {
  /// A message of this session (``LinkSession/handle(_:now:into:)``): one out of place is
  /// counted as unexpected.
  @_spi(Link) public mutating func handle(
    _ message: Message, now: Instant, into output: inout LoginOutput
  ) { dispatch(message, now: now, into: &output) }

  private mutating func dispatch(
    _ message: Message, now: Instant, into output: inout LoginOutput
  ) {
    switch message {
    case .loginAccept(let accept):
      accepted(accept, now: now, into: &output)
    case .loginRefuse(let code):
      refused(LoginError(refusal: code), into: &output)
    case .heartbeatAck:
      guard isConnected else { return unexpected() }
      link.lastData = now
    case .channelAck(let session, let sequence):
      guard isConnected else { return unexpected() }
      guard session == channels.serverSession else { return stale() }
      link.lastData = now
      channels.acknowledge(upTo: sequence)
    case .memberEvents(let events):
      guard isConnected else { return unexpected() }
      guard events.session == channels.serverSession else { return stale() }
      take(events, into: &output)
    case .kick(.banned):
      guard isLoggingInOrIn else { return unexpected() }
      reportLoginResult(.notAuthorized, into: &output)
      abort(.bannedByServer, into: &output)
    case .kick(.remoteLogin):
      guard isLoggingInOrIn else { return unexpected() }
      reportLoginResult(.unknown, into: &output)
      abort(.remoteLogin, into: &output)
    case .tokenExpired:
      tokenExpired(into: &output)
    case .sessionUnknown:
      // The server no longer holds the session (it restarted, or the grace ran out while
      // this side still heard acks): log in again at once.
      guard isConnected else { return unexpected() }
      transition(.interrupted, into: &output)
      startAttempts(since: now, now: now, into: &output)
    case .tokenRenewed(let renewal):
      renewed(renewal, now: now, into: &output)
    default:
      // kick(.sameUID), the channel profile's messages and a client's own: out of place.
      // (`default`, not those cases listed: matching them copied and dropped their
      // payloads, 184 bytes of code.)
      unexpected()
    }
  }

  private mutating func unexpected() { link.counters.unexpected &+= 1 }

  /// A MEMBER_EVENTS or CHANNEL_ACK of an earlier server session, overtaken by a new one's
  /// LOGIN_ACCEPT: its numbers are not the new session's.
  private mutating func stale() { ownCounters.staleSession &+= 1 }

  private mutating func accepted(
    _ accept: LoginAccept, now: Instant, into output: inout LoginOutput
  ) {
    guard isLoggingInOrIn else { return unexpected() }
    let wasLive = isConnected
    let renew = link.accepted(tokenTimeLeftMs: accept.tokenTimeLeftMs, now: now).renew
    // Only another server session's number means the server knows none of the channels
    // (its RESUMED flag does not: a late answer to an earlier LOGIN of this same session
    // says "not resumed" too, and must not reset the numbering the server goes on with).
    if accept.session != channels.serverSession {
      channels.restart(serverSession: accept.session)
    }
    reportLoginResult(.ok, into: &output)
    transition(.loginSuccess, into: &output)
    if !wasLive || !accept.resumed {
      sendPendingOperations(limit: LoginChannels.maximumPending, into: &output)
    }
    if renew { output.sendRenewal(cookie: link.cookie, token: link.token) }
  }

  private mutating func refused(_ error: LoginError, into output: inout LoginOutput) {
    switch state {
    case .connecting:
      reportLoginResult(error, into: &output)
      end(.loginFailure, into: &output)
    case .reconnecting:
      // Reconnecting never gives up (docs/BEHAVIOUR.md §2): a ban ends it; a token that no longer
      // works is reported, and the attempts go on for the token the app hands over next.
      switch error {
      case .notAuthorized:
        abort(.bannedByServer, into: &output)
      case .tokenExpired, .invalidToken:
        ownCounters.refusalsWhileReconnecting &+= 1
        reportTokenExpired(into: &output)
      default:
        ownCounters.refusalsWhileReconnecting &+= 1
      }
    case .disconnected, .connected, .aborted:
      unexpected()
    }
  }

  /// The server says the token expired. CONNECTED: the server ended the session:
  /// token-expired, then DISCONNECTED/TOKEN_EXPIRED. RECONNECTING: token-expired, no
  /// state change. CONNECTING: the first login is refused (LOGIN_FAILURE).
  private mutating func tokenExpired(into output: inout LoginOutput) {
    switch state {
    case .connected:
      reportTokenExpired(into: &output)
      end(.tokenExpired, into: &output)
    case .reconnecting:
      reportTokenExpired(into: &output)
    case .connecting:
      refused(.tokenExpired, into: &output)
    case .disconnected, .aborted:
      unexpected()
    }
  }

  /// Delivers the entries that come next in order; earlier ones are repeats, and a batch
  /// that starts past the next expected number waits for the server to resend the gap.
  private mutating func take(_ events: MemberEvents, into output: inout LoginOutput) {
    for event in events {
      let expected = channels.eventsReceived &+ 1
      if event.sequence != expected {
        // Numbers after `expected` (in wrapping order): one is missing, stop here.
        // Numbers before it were delivered already.
        guard event.sequence &- expected >= 1 << 31 else {
          ownCounters.eventsOutOfOrder &+= 1
          return
        }
        continue
      }
      channels.eventsReceived = expected
      // One notify call for both kinds: each call site costs the retains of both names.
      let notification: LoginNotification =
        switch event.kind {
        case .joined: .memberJoined(channel: event.channel, userID: event.userID)
        case .left: .memberLeft(channel: event.channel, userID: event.userID)
        }
      output.notify(notification)
    }
  }

  private mutating func renewed(
    _ renewal: TokenRenewal, now: Instant, into output: inout LoginOutput
  ) {
    guard isConnected, let accepted = link.settleRenewal(renewal, now: now) else {
      return unexpected()
    }
    if !accepted { output.notify(.tokenExpired) }
  }
}
