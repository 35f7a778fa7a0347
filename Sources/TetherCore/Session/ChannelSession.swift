// SPDX-License-Identifier: Apache-2.0
/// The channel session of docs/BEHAVIOUR.md §1 as a value: a state machine with no socket, no clock
/// and no allocation of its own in steady state.
///
/// Each entry point takes an event and `now` (monotonic nanoseconds), updates the state,
/// and appends what to do to a ``ChannelOutput``: datagrams to send, notifications to
/// deliver. Afterwards ``nextDeadline`` says when to call ``advance(to:into:)`` at the
/// latest. Receiving a packet only records the time of activity: no timer structure is
/// reordered, and the deadline it moves is found when it is next asked for.
///
/// The machinery it shares with the login session is its ``LinkCore``; what is its own
/// here is the channel: its members and their verdicts, join reasons and uid numbering.
///
/// `Random` supplies session cookies and retry jitter; tests inject a seeded one.
public struct ChannelSession<Random: RandomNumberGenerator> {
  public let config: ChannelConfig
  var random: Random

  /// The current state; DISCONNECTED until ``join(token:channel:uid:now:into:)``.
  public private(set) var state: ConnectionState = .disconnected
  /// The reason that came with the current state; nil before the first change.
  public private(set) var reason: ConnectionChangedReason?

  /// The machinery both profiles share. What proves the round trip here: an ACCEPT, a
  /// HEARTBEAT_ACK, a TOKEN_RENEWED or a SESSION_UNKNOWN. INTERRUPTED, LOST and give-up
  /// count from it: presence digests do not, since the server sends them to a session
  /// whose uplink is dead until it forgets it (docs/BEHAVIOUR.md §1.3, "What counts as an
  /// answer").
  @_spi(Link) public var link: LinkCore
  /// The join being made or held; nil while DISCONNECTED.
  var membership: Membership?
  /// When any packet of this session arrived, presence digests included (the join call,
  /// before any): the downlink works up to here, so the members' clock runs up to two
  /// heartbeats past it.
  var lastHeard: Instant = .zero
  var members: RemoteMembers

  /// - Throws: ``TetherError/invalidArgument`` when `config` does not validate.
  public init(config: ChannelConfig, random: Random) throws(TetherError) {
    try config.validate()
    self.config = config
    self.random = random
    link = LinkCore(timing: config.linkTiming)
    members = RemoteMembers(
      interruptedAfter: config.interruptedAfter, offlineAfter: config.remoteOfflineAfter)
  }

  // MARK: - Queries

  /// What the session counted but did not act on.
  public var counters: ChannelCounters {
    ChannelCounters(
      malformed: link.counters.malformed, foreign: link.counters.foreign,
      unexpected: link.counters.unexpected, joinAttempts: link.counters.attempts)
  }

  /// The channel joined or being joined; nil while DISCONNECTED.
  public var channel: ChannelName? { membership?.channel }

  /// The uid in the channel: the one asked for until the server assigns one.
  public var uid: UInt32? { membership?.uid }

  /// When the current token expires, if the server said so.
  public var tokenExpiresAt: Instant? { link.tokenExpiresAt }

  /// The remote members currently known.
  public var memberCount: Int { members.count }

  /// Where the current (re)join effort stands; nil unless CONNECTING or RECONNECTING.
  public var retryStatus: RetryStatus? {
    guard case .attempting(let effort) = link.phase else { return nil }
    return RetryStatus(
      attempt: effort.attempt, nextAttemptAt: effort.nextAttemptAt,
      giveUpAt: effort.endsAt ?? Instant(nanoseconds: .max))
  }

  // MARK: - Shared steps

  /// Moves to `reason`'s state; reports it unless the pair is the current one.
  mutating func transition(_ reason: ConnectionChangedReason, into output: inout ChannelOutput) {
    guard reason.state != state || reason != self.reason else { return }
    state = reason.state
    self.reason = reason
    output.notify(.connectionStateChanged(state, reason))
  }

  /// A packet arrived that proves the round trip.
  mutating func recordData(_ now: Instant) {
    recordHeard(now)
    link.lastData = now
  }

  /// A packet of this session arrived: the members' clock resumes if it had stopped.
  mutating func recordHeard(_ now: Instant) {
    members.accountGap(stoppedAt: memberHorizon, resumedAt: now)
    lastHeard = now
  }

  /// Members are judged silent only up to here: two heartbeats past the last packet heard.
  var memberHorizon: Instant { lastHeard + config.heartbeatInterval + config.heartbeatInterval }

  /// Stops the session where it is: no more attempts, deadlines or member verdicts.
  @inline(never)  // many callers; one copy in the Embedded library
  mutating func fail(_ reason: ConnectionChangedReason, into output: inout ChannelOutput) {
    link.stop()
    members.removeAll()
    transition(reason, into: &output)
  }

  /// Ends the session entirely: back to DISCONNECTED with `reason`.
  @inline(never)  // two callers; one copy in the Embedded library
  mutating func end(_ reason: ConnectionChangedReason, into output: inout ChannelOutput) {
    link.close()
    members.removeAll()
    membership = nil
    transition(reason, into: &output)
  }

  /// The token is no longer valid: request-token, then FAILED/TOKEN_EXPIRED.
  mutating func expireToken(into output: inout ChannelOutput) {
    output.notify(.requestToken)
    fail(.tokenExpired, into: &output)
  }

  /// Begins a (re)join effort whose clock started at `outageSince`, with a JOIN now.
  mutating func startAttempts(outageSince: Instant, now: Instant, into output: inout ChannelOutput)
  {
    link.startEffort(
      since: outageSince, now: now, endsAfter: config.giveUpAfter, lostAfter: config.lostAfter)
    sendJoinAttempt(now: now, into: &output)
  }

  /// Sends a JOIN at once, starting the backoff over but keeping the effort's clock (or
  /// starting an effort from the last data if the session was live).
  mutating func retryNow(now: Instant, into output: inout ChannelOutput) {
    guard link.restartBackoff() else {
      startAttempts(outageSince: link.lastData, now: now, into: &output)
      return
    }
    sendJoinAttempt(now: now, into: &output)
  }

  @inline(never)  // three callers; one copy in the Embedded library
  mutating func sendJoinAttempt(now: Instant, into output: inout ChannelOutput) {
    guard let membership, link.nextAttempt(now: now, draw: random.next()) != nil else { return }
    link.counters.attempts &+= 1
    let request = JoinRequest(
      uid: membership.uid, appID: config.appID, channel: membership.channel,
      token: link.token, isRejoin: link.everAccepted)
    output.send(Packet(cookie: link.cookie, message: .join(request)))
    if let status = retryStatus { output.notify(.joinAttempt(status)) }
  }
}

/// What the session counted: datagrams it set aside, and JOINs it sent (for logs, stats
/// and tests).
public struct ChannelCounters: Equatable, Sendable {
  /// Datagrams that did not decode.
  public var malformed: UInt64 = 0
  /// Packets whose cookie was not this session's (or that came with no session).
  public var foreign: UInt64 = 0
  /// Packets of a client-to-server type, or of the login profile.
  public var unexpected: UInt64 = 0
  /// JOINs sent: first joins, their retries, and rejoins.
  public var joinAttempts: UInt64 = 0
}

/// The join being made or held (the link holds its cookie and token).
struct Membership {
  let channel: ChannelName
  /// Asked for, then the server's.
  var uid: UInt32
  let joinedAt: Instant
}
