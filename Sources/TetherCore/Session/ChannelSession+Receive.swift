// SPDX-License-Identifier: Apache-2.0
// MARK: - Packets from the edge server

extension ChannelSession: LinkSession {
  /// A message of this session (``LinkSession/handle(_:now:into:)``): any the current
  /// state has no use for is counted and ignored.
  @_spi(Link) public mutating func handle(
    _ message: Message, now: Instant, into output: inout ChannelOutput
  ) { dispatch(message, now: now, into: &output) }

  private mutating func dispatch(
    _ message: Message, now: Instant, into output: inout ChannelOutput
  ) {
    switch message {
    case .accept(let accept):
      accepted(accept, now: now, into: &output)
    case .refuse(let reason):
      refused(reason, into: &output)
    case .heartbeatAck:
      if link.isLive { recordData(now) }
    case .presence(let digest):
      presence(digest, now: now, into: &output)
    case .kick(.banned):
      if isJoiningOrJoined { fail(.bannedByServer, into: &output) }
    case .kick(.sameUID):
      if isJoiningOrJoined { fail(.sameUIDLogin, into: &output) }
    case .tokenExpired:
      // While the attempts carry a newer token, the notice is the old session's (its token
      // ran out at the server as the app renewed it: the expiry was reported already).
      if isJoiningOrJoined && !link.attemptsCarryNewerToken { expireToken(into: &output) }
    case .sessionUnknown:
      guard link.isLive else { break }
      recordData(now)
      transition(.keepAliveTimeout, into: &output)
      startAttempts(outageSince: now, now: now, into: &output)
    case .tokenRenewed(let renewal):
      renewed(renewal, now: now, into: &output)
    default:
      // Client-to-server types, and the login profile's (KICK REMOTE_LOGIN included):
      // nothing a channel session uses. (`default`, not those cases listed: matching them
      // copies the message.)
      link.counters.unexpected &+= 1
    }
  }

  /// A PRESENCE digest while live: each entry but this session's own applied. Out of line,
  /// the digest borrowed: iterating it in the switch copied the whole message first (an
  /// outlined copy of Message).
  @inline(never)
  private mutating func presence(
    _ digest: borrowing PresenceDigest, now: Instant, into output: inout ChannelOutput
  ) {
    guard link.isLive, let membership else { return }
    recordHeard(now)
    let elapsed = now.since(membership.joinedAt).clampedMilliseconds
    var entries = digest.makeIterator()
    while let entry = entries.next() {
      if entry.uid != membership.uid {
        members.apply(entry, at: now, elapsedMs: elapsed, into: &output)
      }
    }
  }

  /// CONNECTING, CONNECTED or RECONNECTING: the link is busy.
  private var isJoiningOrJoined: Bool {
    if case .idle = link.phase { false } else { true }
  }

  private mutating func accepted(
    _ accept: JoinAccept, now: Instant, into output: inout ChannelOutput
  ) {
    guard case .attempting = link.phase, let membership else { return }
    recordHeard(now)
    let (rejoin, renew) = link.accepted(tokenTimeLeftMs: accept.tokenTimeLeftMs, now: now)
    self.membership?.uid = accept.uid
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
    // As a renewal while CONNECTED: the session is live, and the answer proves the trip.
    if renew { output.sendRenewal(cookie: link.cookie, token: link.token) }
  }

  private mutating func refused(_ reason: RefuseReason, into output: inout ChannelOutput) {
    guard case .attempting = link.phase else { return }
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
    guard link.isLive, link.renewal != nil else { return }
    recordHeard(now)
    if link.settleRenewal(renewal, now: now) == false { output.notify(.requestToken) }
  }
}
