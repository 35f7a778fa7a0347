// SPDX-License-Identifier: Apache-2.0
/// docs/BEHAVIOUR.md §2's login session as a value: the messaging profile's state machine, with
/// no socket, no clock and no allocation of its own in steady state. The machinery it
/// shares with the channel session is its ``LinkCore``, with the codec and the output
/// buffer; what is its own here is the login: its timeout and result, the channels of a
/// login and their members' events.
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

  /// The machinery both profiles share. What proves the round trip here: a LOGIN_ACCEPT,
  /// HEARTBEAT_ACK, CHANNEL_ACK or TOKEN_RENEWED; member events do not prove anything.
  @_spi(Link) public var link: LinkCore
  /// The login being made or held; nil while DISCONNECTED.
  var account: Account?
  var channels = LoginChannels()
  /// The two latest `login` calls that were not refused as too often (TOO_OFTEN).
  var recentCalls: (Instant?, Instant?) = (nil, nil)
  /// What only a login session counts (``counters`` adds the link's).
  var ownCounters = LoginCounters()

  /// - Throws: ``TetherError/invalidArgument`` when `config` does not validate.
  public init(config: LoginConfig, random: Random) throws(TetherError) {
    try config.validate()
    self.config = config
    self.random = random
    link = LinkCore(timing: config.linkTiming)
  }

  // MARK: - Queries

  /// What the session counted but did not act on.
  public var counters: LoginCounters {
    var counters = ownCounters
    counters.malformed = link.counters.malformed
    counters.foreign = link.counters.foreign
    counters.unexpected = link.counters.unexpected
    counters.loginAttempts = link.counters.attempts
    return counters
  }

  /// The user logged in or logging in; nil while DISCONNECTED.
  public var userID: UserID? { account?.userID }

  /// The channels the app is in (or asked to be in), in the order it joined them.
  public var joinedChannels: [ChannelName] { channels.joined }

  /// Channel operations the server has not acknowledged yet.
  public var pendingChannelOperations: Int { channels.pendingPackets.count }

  /// When the current token expires, if a server said so.
  public var tokenExpiresAt: Instant? { link.tokenExpiresAt }

  // MARK: - Shared steps

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

  /// Reports that the token expired, once per token.
  @inline(never)  // four callers
  mutating func reportTokenExpired(into output: inout LoginOutput) {
    guard !link.tokenExpiryReported else { return }
    link.tokenExpiryReported = true
    output.notify(.tokenExpired)
  }

  /// Ends the session: DISCONNECTED with `reason`, nothing kept.
  @inline(never)  // four callers
  mutating func end(_ reason: LoginChangeReason, into output: inout LoginOutput) {
    link.close()
    account = nil
    channels.removeAll()
    transition(reason, into: &output)
  }

  /// Stops where it is: ABORTED with `reason`; only logout applies now.
  mutating func abort(_ reason: LoginChangeReason, into output: inout LoginOutput) {
    link.stop()
    channels.removeAll()
    transition(reason, into: &output)
  }

  /// Begins a (re)login effort whose clock started at `since`, with a LOGIN now. Only the
  /// first login (CONNECTING) times out; reconnecting goes on for ever.
  mutating func startAttempts(since: Instant, now: Instant, into output: inout LoginOutput) {
    let first = if case .connecting = state { true } else { false }
    link.startEffort(
      since: since, now: now, endsAfter: first ? config.loginTimeout : nil, lostAfter: nil)
    sendLoginAttempt(now: now, into: &output)
  }

  /// Sends a LOGIN now, the backoff started over, the effort's clock kept.
  mutating func retryNow(now: Instant, into output: inout LoginOutput) {
    if link.restartBackoff() { sendLoginAttempt(now: now, into: &output) }
  }

  @inline(never)  // called from four places; inlined, each had its own backoff and LOGIN
  mutating func sendLoginAttempt(now: Instant, into output: inout LoginOutput) {
    guard let effort = link.nextAttempt(now: now, draw: random.next()) else { return }
    sendLogin(into: &output)
    output.notify(.loginAttempt(attempt: effort.attempt, nextAttemptAt: effort.nextAttemptAt))
  }

  /// A LOGIN for the current account: RELOGIN once a server accepted this cookie.
  mutating func sendLogin(into output: inout LoginOutput) {
    guard let account else { return }
    link.counters.attempts &+= 1
    let request = LoginRequest(
      appID: config.appID, userID: account.userID, token: link.token,
      isRelogin: link.everAccepted)
    output.send(Packet(cookie: link.cookie, message: .login(request)))
  }

  /// Sends the oldest unacknowledged channel operations (at most `limit`).
  mutating func sendPendingOperations(limit: Int, into output: inout LoginOutput) {
    // Indices rather than `prefix(limit)`, which costs its own generic code.
    for index in 0..<min(limit, channels.pendingPackets.count) {
      var packet = channels.pendingPackets[index]
      packet.cookie = link.cookie
      output.send(packet)
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

/// The login being made or held (the link holds its cookie and token).
struct Account {
  let userID: UserID
  /// The `login` call's result is not reported yet.
  var loginResultOwed = true
}
