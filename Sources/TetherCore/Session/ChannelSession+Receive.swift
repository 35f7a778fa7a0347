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
    guard state == .connecting || state == .reconnecting,
      let rejoin = membership?.accept(accept, now: now),
      let channel = membership?.channel, let joinedAt = membership?.joinedAt
    else { return }
    recordData(now)
    link = .live(nextHeartbeatAt: now + config.heartbeatInterval)
    let elapsed = now.since(joinedAt).clampedMilliseconds
    if rejoin {
      transition(.rejoinSuccess, into: &output)
      output.notify(.rejoinChannelSuccess(channel: channel, uid: accept.uid, elapsedMs: elapsed))
    } else {
      transition(.joinSuccess, into: &output)
      output.notify(.joinChannelSuccess(channel: channel, uid: accept.uid, elapsedMs: elapsed))
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
    guard state == .connected, membership?.renewal != nil else { return }
    recordData(now)
    if renewal.refused == nil {
      membership?.renewal = nil
      membership?.tokenExpiresAt =
        renewal.tokenTimeLeftMs == 0 ? nil : now + .milliseconds(UInt64(renewal.tokenTimeLeftMs))
    } else {
      membership?.restoreTokenBeforeRenewal()
      output.notify(.requestToken)
    }
  }
}

// The membership is changed in place: a copy of it costs the Embedded library a copy and
// a destroy of every field at each use.
extension Membership {
  /// The server accepted the join: true when a join had been accepted before (a rejoin).
  mutating func accept(_ accept: JoinAccept, now: Instant) -> Bool {
    // RECONNECTING without a join ever accepted (renew_token after a first join refused
    // for an expired token) ends in the first join's success, not a rejoin's.
    let rejoin = everAccepted
    everAccepted = true
    uid = accept.uid
    renewal = nil
    if tokenUnconfirmed {
      tokenUnconfirmed = false
      tokenWarned = false
    }
    tokenExpiresAt =
      accept.tokenTimeLeftMs == 0 ? nil : now + .milliseconds(UInt64(accept.tokenTimeLeftMs))
    return rejoin
  }

  /// The server refused the renewed token: back to the token before the renewal.
  mutating func restoreTokenBeforeRenewal() {
    guard let previous = renewal else { return }
    renewal = nil
    token = previous.previousToken
    tokenExpiresAt = previous.previousExpiresAt
    tokenWarned = previous.previousWarned
  }
}
