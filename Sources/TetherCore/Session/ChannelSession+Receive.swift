// MARK: - Packets from the edge server

extension ChannelSession {
  /// Decodes and handles one datagram. A datagram that does not decode changes nothing;
  /// it is counted in ``counters`` and its error returned (for a log).
  @discardableResult
  public mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout ChannelOutput
  ) -> WireError? {
    do {
      let packet = try Packet.decode(datagram)
      receive(packet, now: now, into: &output)
      return nil
    } catch {
      counters.malformed &+= 1
      return error
    }
  }

  /// Handles one decoded packet. A packet whose cookie is not this session's is counted
  /// and ignored; so is any packet the current state has no use for.
  public mutating func receive(_ packet: Packet, now: Instant, into output: inout ChannelOutput) {
    let now = tick(now)
    guard let cookie = membership?.cookie, packet.cookie == cookie else {
      counters.foreign &+= 1
      return
    }
    switch packet.message {
    case .accept(let accept):
      accepted(accept, now: now, into: &output)
    case .refuse(let reason):
      refused(reason, into: &output)
    case .heartbeatAck:
      if state == .connected { recordData(now) }
    case .presence(let digest):
      guard state == .connected else { break }
      recordHeard(now)
      guard let joinedAt = membership?.joinedAt, let ownUID = membership?.uid else { break }
      let elapsed = now.since(joinedAt).clampedMilliseconds
      for entry in digest where entry.uid != ownUID {
        members.apply(entry, at: now, elapsedMs: elapsed, into: &output)
      }
    case .kick(let reason):
      guard isJoiningOrJoined else { break }
      fail(reason == .banned ? .bannedByServer : .sameUIDLogin, into: &output)
    case .tokenExpired:
      if isJoiningOrJoined { expireToken(into: &output) }
    case .sessionUnknown:
      guard state == .connected else { break }
      recordData(now)
      transition(.keepAliveTimeout, into: &output)
      startAttempts(outageSince: now, now: now, into: &output)
    case .tokenRenewed(let renewal):
      renewed(renewal, now: now, into: &output)
    case .join, .heartbeat, .leave, .renewToken, .login, .loginHeartbeat, .logout,
      .channelOperation, .loginAccept, .loginRefuse, .memberEvents, .channelAck:
      // Client-to-server types, and the login profile's: nothing a channel session uses.
      counters.unexpected &+= 1
    }
    runDue(now, into: &output)
  }

  private var isJoiningOrJoined: Bool {
    state == .connecting || state == .connected || state == .reconnecting
  }

  private mutating func accepted(
    _ accept: JoinAccept, now: Instant, into output: inout ChannelOutput
  ) {
    guard state == .connecting || state == .reconnecting, var membership else { return }
    // RECONNECTING without a join ever accepted (renew_token after a first join refused
    // for an expired token) ends in the first join's success, not a rejoin's.
    let rejoin = membership.everAccepted
    membership.everAccepted = true
    membership.uid = accept.uid
    membership.renewal = nil
    if membership.tokenUnconfirmed {
      membership.tokenUnconfirmed = false
      membership.tokenWarned = false
    }
    membership.tokenExpiresAt =
      accept.tokenTimeLeftMs == 0 ? nil : now + .milliseconds(UInt64(accept.tokenTimeLeftMs))
    self.membership = membership
    recordData(now)
    link = .live(nextHeartbeatAt: now + config.heartbeatInterval)
    let elapsed = now.since(membership.joinedAt).clampedMilliseconds
    if rejoin {
      transition(.rejoinSuccess, into: &output)
      output.notify(
        .rejoinChannelSuccess(channel: membership.channel, uid: accept.uid, elapsedMs: elapsed))
    } else {
      transition(.joinSuccess, into: &output)
      output.notify(
        .joinChannelSuccess(channel: membership.channel, uid: accept.uid, elapsedMs: elapsed))
    }
  }

  private mutating func refused(_ reason: RefuseReason, into output: inout ChannelOutput) {
    guard state == .connecting || state == .reconnecting else { return }
    switch reason {
    case .invalidToken: end(.invalidToken, into: &output)
    case .tokenExpired: expireToken(into: &output)
    case .invalidAppID: fail(.invalidAppID, into: &output)
    case .invalidChannelName: fail(.invalidChannelName, into: &output)
    case .rejected: fail(.rejectedByServer, into: &output)
    }
  }

  private mutating func renewed(
    _ renewal: TokenRenewal, now: Instant, into output: inout ChannelOutput
  ) {
    guard state == .connected, var membership, let previous = membership.renewal else { return }
    recordData(now)
    membership.renewal = nil
    if renewal.refused == nil {
      membership.tokenExpiresAt =
        renewal.tokenTimeLeftMs == 0 ? nil : now + .milliseconds(UInt64(renewal.tokenTimeLeftMs))
      self.membership = membership
    } else {
      membership.token = previous.previousToken
      membership.tokenExpiresAt = previous.previousExpiresAt
      membership.tokenWarned = previous.previousWarned
      self.membership = membership
      output.notify(.requestToken)
    }
  }
}
