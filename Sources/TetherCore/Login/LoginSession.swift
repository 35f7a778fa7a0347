/// docs/BEHAVIOUR.md §2's login session as a value: the messaging profile's state machine, with
/// no socket, no clock and no allocation of its own in steady state. It shares the channel
/// session's machinery: the codec, the retry backoff, deadline windows, the output buffer
/// and the liveness rule (only an answer proves the round trip).
///
/// Each entry point takes an event and `now` (monotonic nanoseconds), updates the state,
/// and appends what to do to a ``LoginOutput``. Afterwards ``nextDeadlineWindow`` says when
/// to call ``advance(to:into:)``.
public struct LoginSession<Random: RandomNumberGenerator> {
  public let config: LoginConfig
  var random: Random

  /// The current state; DISCONNECTED until ``login(token:userID:now:into:)``.
  public private(set) var state: LoginState = .disconnected
  /// The reason that came with the current state; nil before the first change.
  public private(set) var reason: LoginChangeReason?
  /// What the session counted but did not act on.
  public internal(set) var counters = LoginCounters()

  /// The login being made or held; nil while DISCONNECTED.
  var account: Account?
  var link: Link = .idle
  /// When the last packet arrived that proves the server heard this session (a
  /// LOGIN_ACCEPT, HEARTBEAT_ACK, CHANNEL_ACK or TOKEN_RENEWED; the login call before
  /// any). INTERRUPTED counts from it; member events do not prove anything.
  var lastData: Instant = .zero
  var channels = LoginChannels()
  /// The two latest `login` calls that were not refused as too often (TOO_OFTEN).
  var recentCalls: (Instant?, Instant?) = (nil, nil)
  /// The latest `now` seen: time never runs backwards inside the session.
  var clock: Instant = .zero

  /// - Throws: ``TetherError/invalidArgument`` when `config` does not validate.
  public init(config: LoginConfig, random: Random) throws(TetherError) {
    try config.validate()
    self.config = config
    self.random = random
  }

  // MARK: - Queries

  /// The user logged in or logging in; nil while DISCONNECTED.
  public var userID: UserID? { account?.userID }

  /// The channels the app is in (or asked to be in), in the order it joined them.
  public var joinedChannels: [ChannelName] { channels.joined }

  /// Channel operations the server has not acknowledged yet.
  public var pendingChannelOperations: Int { channels.pending.count }

  /// When the current token expires, if a server said so.
  public var tokenExpiresAt: Instant? { account?.tokenExpiresAt }

  // MARK: - Shared steps

  mutating func tick(_ now: Instant) -> Instant {
    if now > clock { clock = now }
    return clock
  }

  /// Moves to `reason`'s state; reports it unless the pair is the current one.
  @inline(never)  // six callers
  mutating func transition(_ reason: LoginChangeReason, into output: inout LoginOutput) {
    guard reason.state != state || reason != self.reason else { return }
    state = reason.state
    self.reason = reason
    output.notify(.connectionStateChanged(state, reason))
  }

  /// Reports the outcome of the `login` call, if it is still owed.
  @inline(never)  // six callers
  mutating func reportLoginResult(_ result: LoginError, into output: inout LoginOutput) {
    guard account?.loginResultOwed == true else { return }
    account?.loginResultOwed = false
    output.notify(.loginResult(result))
  }

  /// Ends the session: DISCONNECTED with `reason`, nothing kept.
  @inline(never)  // four callers
  mutating func end(_ reason: LoginChangeReason, into output: inout LoginOutput) {
    link = .idle
    account = nil
    channels.removeAll()
    transition(reason, into: &output)
  }

  /// Stops where it is: ABORTED with `reason`; only logout applies now.
  mutating func abort(_ reason: LoginChangeReason, into output: inout LoginOutput) {
    link = .idle
    channels.removeAll()
    transition(reason, into: &output)
  }

  /// Begins a (re)login effort whose clock started at `since`, with a LOGIN now.
  mutating func startAttempts(since: Instant, now: Instant, into output: inout LoginOutput) {
    link = .attempting(
      Attempts(attempt: 0, nextAttemptAt: now, outageSince: since, lostReported: false))
    sendLoginAttempt(now: now, into: &output)
  }

  /// Sends a LOGIN now, the backoff started over, the effort's clock kept.
  mutating func retryNow(now: Instant, into output: inout LoginOutput) {
    guard case .attempting(var attempts) = link else { return }
    attempts.attempt = 0
    link = .attempting(attempts)
    sendLoginAttempt(now: now, into: &output)
  }

  @inline(never)  // called from four places; inlined, each had its own backoff and LOGIN
  mutating func sendLoginAttempt(now: Instant, into output: inout LoginOutput) {
    guard case .attempting(var attempts) = link else { return }
    attempts.attempt = attempts.attempt == .max ? .max : attempts.attempt + 1
    attempts.nextAttemptAt =
      now + config.retry.delay(afterAttempt: attempts.attempt, using: &random)
    link = .attempting(attempts)
    sendLogin(into: &output)
    output.notify(.loginAttempt(attempt: attempts.attempt, nextAttemptAt: attempts.nextAttemptAt))
  }

  /// A LOGIN for the current account: RELOGIN once a server accepted this cookie.
  mutating func sendLogin(into output: inout LoginOutput) {
    guard let account else { return }
    counters.loginAttempts &+= 1
    let request = LoginRequest(
      appID: config.appID, userID: account.userID, token: account.token,
      isRelogin: account.everAccepted)
    output.send(Packet(cookie: account.cookie, message: .login(request)))
  }

  /// Sends the oldest unacknowledged channel operations (at most `limit`).
  mutating func sendPendingOperations(limit: Int, into output: inout LoginOutput) {
    guard let cookie = account?.cookie else { return }
    // Indices rather than `prefix(limit)`, which costs its own generic code.
    for index in 0..<min(limit, channels.pending.count) {
      output.send(Packet(cookie: cookie, message: .channelOperation(channels.pending[index])))
    }
  }
}

/// What the login session counted: datagrams it set aside, LOGINs it sent, refusals it
/// took while reconnecting (for logs, stats and tests).
public struct LoginCounters: Equatable, Sendable {
  public var malformed: UInt64 = 0
  public var foreign: UInt64 = 0
  /// Packets of a type a login session has no use for, or out of place.
  public var unexpected: UInt64 = 0
  public var loginAttempts: UInt64 = 0
  /// Member events that came out of order (a gap) and were left for the server to resend.
  public var eventsOutOfOrder: UInt64 = 0
  /// LOGIN_REFUSEs while reconnecting that leave the session reconnecting.
  public var refusalsWhileReconnecting: UInt64 = 0
  /// MEMBER_EVENTS and CHANNEL_ACKs of an earlier server session, set aside.
  public var staleSession: UInt64 = 0
}

/// The login being made or held.
struct Account {
  let userID: UserID
  var token: Token
  let cookie: UInt64
  /// A server accepted this cookie once: later LOGINs are RELOGINs.
  var everAccepted = false
  /// The `login` call's result is not reported yet.
  var loginResultOwed = true
  var heartbeatSequence: UInt32 = 0
  var tokenExpiresAt: Instant?
  /// on_token_expired was reported for the current token.
  var tokenExpiryReported = false
  /// A RENEW_TOKEN not yet answered: the token (and its expiry) to go back to if it is
  /// refused.
  var renewalFallback: (token: Token, expiresAt: Instant?)?

  /// The token expires `timeLeftMs` after `now` (0: never), as a server said.
  mutating func setExpiry(timeLeftMs: UInt32, now: Instant) {
    tokenExpiresAt = timeLeftMs == 0 ? nil : now + .milliseconds(UInt64(timeLeftMs))
  }

  /// Settles the RENEW_TOKEN that was out: the new token stays, with the expiry the server
  /// gave it, or, refused, the fallback comes back. Returns whether it was accepted; nil
  /// (and nothing changes) when no RENEW_TOKEN was out.
  mutating func settleRenewal(_ renewal: TokenRenewal, now: Instant) -> Bool? {
    guard let previous = renewalFallback else { return nil }
    renewalFallback = nil
    guard renewal.refused != nil else {
      setExpiry(timeLeftMs: renewal.tokenTimeLeftMs, now: now)
      return true
    }
    (token, tokenExpiresAt) = previous
    return false
  }

  /// Takes `token`; its expiry is unknown until a server says. While a RENEW_TOKEN is out
  /// (`keepingFallback`), the token the server last accepted stays the fallback.
  mutating func renew(with token: Token, keepingFallback: Bool) {
    if !keepingFallback {
      renewalFallback = nil
    } else if renewalFallback == nil {
      renewalFallback = (self.token, tokenExpiresAt)
    }
    self.token = token
    tokenExpiresAt = nil
    tokenExpiryReported = false
  }
}
