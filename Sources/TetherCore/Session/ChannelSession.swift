/// The channel session of docs/BEHAVIOUR.md §1 as a value: a state machine with no socket, no clock
/// and no allocation of its own in steady state.
///
/// Each entry point takes an event and `now` (monotonic nanoseconds), updates the state,
/// and appends what to do to a ``ChannelOutput``: datagrams to send, notifications to
/// deliver. Afterwards ``nextDeadline`` says when to call ``advance(to:into:)`` at the
/// latest. Receiving a packet only records the time of activity: no timer structure is
/// reordered, and the deadline it moves is found when it is next asked for.
///
/// `Random` supplies session cookies and retry jitter; tests inject a seeded one.
public struct ChannelSession<Random: RandomNumberGenerator> {
  public let config: ChannelConfig
  var random: Random

  /// The current state; DISCONNECTED until ``join(token:channel:uid:now:into:)``.
  public private(set) var state: ConnectionState = .disconnected
  /// The reason that came with the current state; nil before the first change.
  public private(set) var reason: ConnectionChangedReason?
  /// What the session counted but did not act on.
  public internal(set) var counters = ChannelCounters()

  /// The join being made or held; nil while DISCONNECTED.
  var membership: Membership?
  var link: Link = .idle
  /// When the last packet arrived that proves the server heard this session: an ACCEPT, a
  /// HEARTBEAT_ACK, a TOKEN_RENEWED or a SESSION_UNKNOWN (the join call, before any).
  /// INTERRUPTED, LOST and give-up count from it: presence digests do not, since the server
  /// sends them to a session whose uplink is dead until it forgets it (docs/BEHAVIOUR.md §1.3,
  /// "What counts as an answer").
  var lastData: Instant = .zero
  /// When any packet of this session arrived, presence digests included (the join call,
  /// before any): the downlink works up to here, so the members' clock runs up to two
  /// heartbeats past it.
  var lastHeard: Instant = .zero
  var members: RemoteMembers
  /// The latest `now` seen: time never runs backwards inside the session.
  var clock: Instant = .zero

  /// - Throws: ``TetherError/invalidArgument`` when `config` does not validate.
  public init(config: ChannelConfig, random: Random) throws(TetherError) {
    try config.validate()
    self.config = config
    self.random = random
    self.members = RemoteMembers(
      interruptedAfter: config.interruptedAfter, offlineAfter: config.remoteOfflineAfter)
  }

  // MARK: - Queries

  /// The channel joined or being joined; nil while DISCONNECTED.
  public var channel: ChannelName? { membership?.channel }

  /// The uid in the channel: the one asked for until the server assigns one.
  public var uid: UInt32? { membership?.uid }

  /// When the current token expires, if the server said so.
  public var tokenExpiresAt: Instant? { membership?.tokenExpiresAt }

  /// The remote members currently known.
  public var memberCount: Int { members.count }

  /// Where the current (re)join effort stands; nil unless CONNECTING or RECONNECTING.
  public var retryStatus: RetryStatus? {
    guard case .attempting(let attempts) = link else { return nil }
    return RetryStatus(
      attempt: attempts.attempt, nextAttemptAt: attempts.nextAttemptAt,
      giveUpAt: attempts.outageSince + config.giveUpAfter)
  }

  /// The earliest instant at which ``advance(to:into:)`` has something to do; nil when
  /// nothing is scheduled (DISCONNECTED, FAILED). After any entry point returns, it is
  /// later than the `now` that entry point was given.
  public var nextDeadline: Instant? { earliestDue()?.at }

  // MARK: - Shared steps

  /// Never lets time run backwards, whatever the driver passes.
  mutating func tick(_ now: Instant) -> Instant {
    if now > clock { clock = now }
    return clock
  }

  /// Moves to `reason`'s state; reports it unless the pair is the current one.
  mutating func transition(_ reason: ConnectionChangedReason, into output: inout ChannelOutput) {
    guard reason.state != state || reason != self.reason else { return }
    state = reason.state
    self.reason = reason
    output.notify(.connectionStateChanged(state, reason))
  }

  /// A packet arrived that proves the round trip (see ``lastData``).
  mutating func recordData(_ now: Instant) {
    recordHeard(now)
    lastData = now
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
    link = .idle
    members.removeAll()
    transition(reason, into: &output)
  }

  /// Ends the session entirely: back to DISCONNECTED with `reason`.
  @inline(never)  // two callers; one copy in the Embedded library
  mutating func end(_ reason: ConnectionChangedReason, into output: inout ChannelOutput) {
    link = .idle
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
    link = .attempting(
      Attempts(attempt: 0, nextAttemptAt: now, outageSince: outageSince, lostReported: false))
    sendJoinAttempt(now: now, into: &output)
  }

  /// Sends a JOIN at once, starting the backoff over but keeping the effort's clock (or
  /// starting an effort from the last data if the session was live).
  mutating func retryNow(now: Instant, into output: inout ChannelOutput) {
    guard case .attempting(var attempts) = link else {
      startAttempts(outageSince: lastData, now: now, into: &output)
      return
    }
    attempts.attempt = 0
    link = .attempting(attempts)
    sendJoinAttempt(now: now, into: &output)
  }

  @inline(never)  // three callers; one copy in the Embedded library
  mutating func sendJoinAttempt(now: Instant, into output: inout ChannelOutput) {
    guard case .attempting(var attempts) = link, let membership else { return }
    attempts.attempt = attempts.attempt == .max ? .max : attempts.attempt + 1
    counters.joinAttempts &+= 1
    attempts.nextAttemptAt =
      now + config.retry.delay(afterAttempt: attempts.attempt, using: &random)
    link = .attempting(attempts)
    let request = JoinRequest(
      uid: membership.uid, appID: config.appID, channel: membership.channel,
      token: membership.token, isRejoin: membership.everAccepted)
    output.send(Packet(cookie: membership.cookie, message: .join(request)))
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
  /// Packets of a client-to-server type.
  public var unexpected: UInt64 = 0
  /// JOINs sent: first joins, their retries, and rejoins.
  public var joinAttempts: UInt64 = 0
}

/// The join being made or held.
struct Membership {
  let channel: ChannelName
  var token: Token
  /// Asked for, then the server's.
  var uid: UInt32
  let cookie: UInt64
  let joinedAt: Instant
  /// A server accepted this membership once: later accepts are rejoins.
  var everAccepted = false
  var heartbeatSequence: UInt32 = 0
  var tokenExpiresAt: Instant?
  /// token-privilege-will-expire was reported for the current token.
  var tokenWarned = false
  /// The token came with renew_token while (re)joining and no server has accepted it
  /// yet: `tokenExpiresAt` is still the previous token's.
  var tokenUnconfirmed = false
  /// A RENEW_TOKEN not yet answered, and what to go back to if it is refused.
  var renewal: PendingRenewal?
}

struct PendingRenewal {
  var previousToken: Token
  var previousExpiresAt: Instant?
  var previousWarned: Bool
}

/// What the session does on the network.
enum Link {
  /// Nothing: DISCONNECTED or FAILED.
  case idle
  /// Sending JOINs: CONNECTING or RECONNECTING.
  case attempting(Attempts)
  /// Joined: CONNECTED, heartbeating.
  case live(nextHeartbeatAt: Instant)
}

struct Attempts {
  var attempt: UInt32
  var nextAttemptAt: Instant
  /// The last data before the effort (or the join call): LOST and give-up count from it.
  var outageSince: Instant
  var lostReported: Bool
}
