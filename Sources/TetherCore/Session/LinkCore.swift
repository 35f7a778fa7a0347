/// What the sessions of both profiles share, once: the proof of the round trip and the
/// interruption it guards, the (re)connect effort with its backoff and thresholds, the
/// heartbeats on their grid, the session cookie, the token with its expiry and the renewal
/// in flight, time that never runs backwards, the shared counters, and the deadline scan.
///
/// A session owns one and calls it; it never calls back. What it answers is plain data
/// (which deadline fell due, an attempt's number, a heartbeat's sequence, the message of a
/// datagram that is this session's), which the profile turns into its own packets,
/// notifications and state changes. It is not generic, so one copy of it serves both
/// profiles in the Embedded library.
struct LinkCore {
  let timing: LinkTiming
  /// What the link does now; the profile's state says why.
  var phase: LinkPhase = .idle
  /// The latest `now` seen: time never runs backwards inside a session.
  var clock: Instant = .zero
  /// When the last packet arrived that proves the server heard this session (the profile
  /// says which do; the session's opening call, before any). INTERRUPTED counts from it.
  var lastData: Instant = .zero
  /// The session's cookie, drawn at random when it opens; 0 while no session is open.
  var cookie: UInt64 = 0
  /// A server accepted this session once: later attempts are rejoins (relogins).
  var everAccepted = false
  var heartbeatSequence: UInt32 = 0
  var token = Token(checked: [])
  /// When the current token expires, if a server said so.
  var tokenExpiresAt: Instant?
  /// The expiry is near and the app was told (the channel's will-expire warning), or the
  /// app acted on an earlier warning.
  var tokenWarned = false
  /// The app was told the token expired (the login profile's, once per token).
  var tokenExpiryReported = false
  /// The token is for the next attempt and no server has accepted it yet: the expiry is
  /// still the previous token's (``TokenChange/forNextAttempt``).
  var tokenUnconfirmed = false
  /// A RENEW_TOKEN not yet answered, and what to go back to if the server refuses it.
  var renewal: PendingRenewal?
  var counters = LinkCounters()

  @inline(never)
  init(timing: LinkTiming) { self.timing = timing }

  /// Never lets time run backwards, whatever the driver passes.
  mutating func tick(_ now: Instant) -> Instant {
    if now > clock { clock = now }
    return clock
  }

  var isLive: Bool {
    if case .live = phase { true } else { false }
  }

  // MARK: - A session's life

  /// A session opens at `now` with `cookie` (0 is taken as 1: 0 means no session).
  mutating func open(cookie: UInt64, token: Token, now: Instant) {
    self.cookie = cookie == 0 ? 1 : cookie
    everAccepted = false
    heartbeatSequence = 0
    lastData = now
    renew(with: token, .afresh)
  }

  /// The session stops where it is: no attempts, heartbeats or deadlines. Its cookie and
  /// token stay (the profile's terminal state holds them until the app ends it).
  mutating func stop() { phase = .idle }

  /// The session ends: nothing of it is kept, and no packet is its own any more.
  mutating func close() {
    stop()
    cookie = 0
    tokenExpiresAt = nil
    renewal = nil
  }

  // MARK: - Receiving

  /// receive's prologue for a datagram: the time (never backwards), then the message it
  /// holds, if it decodes (else it is counted malformed and its error returned) and is this
  /// session's (else it is counted foreign).
  mutating func take(_ datagram: ArraySlice<UInt8>, now: Instant) -> (Message?, WireError?) {
    do throws(WireError) {
      return (take(try Packet.decode(datagram), now: now), nil)
    } catch {
      _ = tick(now)
      counters.malformed &+= 1
      return (nil, error)
    }
  }

  /// receive's prologue for a packet: the time, then its message if it is this session's
  /// (its cookie); another session's is counted foreign.
  @inline(__always)  // in the datagram's take: one function fewer (-68 bytes on aarch64)
  mutating func take(_ packet: consuming Packet, now: Instant) -> Message? {
    _ = tick(now)
    guard cookie != 0, packet.cookie == cookie else {
      counters.foreign &+= 1
      return nil
    }
    return packet.message
  }

  /// A packet arrived that proves the round trip (the profile says which).
  mutating func proven(_ now: Instant) { lastData = now }

  /// A server accepted this session: the round trip is proven, heartbeats start (unless
  /// they run already: a repeated accept keeps their grid), and the token expires when the
  /// server says. Returns whether a server had accepted this session before (a rejoin).
  mutating func accepted(tokenTimeLeftMs: UInt32, now: Instant) -> Bool {
    let again = everAccepted
    everAccepted = true
    lastData = now
    setExpiry(timeLeftMs: tokenTimeLeftMs, now: now)
    tokenExpiryReported = false
    if tokenUnconfirmed {
      // The accepted attempt carried the new token: its warning is to come.
      tokenUnconfirmed = false
      tokenWarned = false
    }
    if !isLive { phase = .live(nextHeartbeatAt: now + timing.heartbeatInterval) }
    return again
  }

  // MARK: - Attempts

  /// Begins a (re)connect effort whose clock started at `since`; the profile sends its
  /// first attempt next. The effort ends (the profile gives up) `endsAfter` past `since`,
  /// and connection-lost falls due `lostAfter` past it; nil: never.
  mutating func startEffort(
    since: Instant, now: Instant, endsAfter: Interval?, lostAfter: Interval?
  ) {
    phase = .attempting(
      Effort(
        attempt: 0, nextAttemptAt: now, endsAt: endsAfter.map { since + $0 },
        lostAt: lostAfter.map { since + $0 }))
  }

  /// Counts the attempt going out now and schedules the next one, `draw` (a random number)
  /// placing it within the backoff. Returns the effort as it stands; nil unless attempting.
  @inline(never)  // both profiles' attempts: one copy of the backoff
  mutating func nextAttempt(now: Instant, draw: UInt64) -> Effort? {
    guard case .attempting(var effort) = phase else { return nil }
    effort.attempt = effort.attempt == .max ? .max : effort.attempt + 1
    effort.nextAttemptAt = now + timing.retry.delay(afterAttempt: effort.attempt, draw: draw)
    phase = .attempting(effort)
    return effort
  }

  /// The backoff starts over, the effort's clock kept: false unless attempting.
  mutating func restartBackoff() -> Bool {
    guard case .attempting(var effort) = phase else { return false }
    effort.attempt = 0
    phase = .attempting(effort)
    return true
  }

  /// connection-lost was reported for this effort.
  mutating func reportLost() {
    guard case .attempting(var effort) = phase else { return }
    effort.lostAt = nil
    phase = .attempting(effort)
  }

  /// The effort's attempts so far; nil unless attempting.
  var effort: Effort? {
    if case .attempting(let effort) = phase { effort } else { nil }
  }

  // MARK: - Heartbeats

  /// The heartbeat due at `due` goes out now: returns its sequence number. The next stays
  /// on the grid; after a late wake-up, the grid restarts from now.
  mutating func beat(due: Instant, now: Instant) -> UInt32 {
    heartbeatSequence &+= 1
    let next = due + timing.heartbeatInterval
    phase = .live(nextHeartbeatAt: next > now ? next : now + timing.heartbeatInterval)
    return heartbeatSequence
  }

  // MARK: - The token

  /// Takes `token` as ``TokenChange`` says.
  mutating func renew(with token: Token, _ change: TokenChange) {
    switch change {
    case .sentToServer:
      if renewal == nil {
        renewal = PendingRenewal(
          previousToken: self.token, previousExpiresAt: tokenExpiresAt,
          previousWarned: tokenWarned)
      }
    case .forNextAttempt, .afresh:
      renewal = nil
    }
    self.token = token
    tokenUnconfirmed = change == .forNextAttempt
    // The app has acted on the old token's warning; its expiry keeps running.
    guard change != .forNextAttempt else {
      tokenWarned = true
      return
    }
    tokenExpiresAt = nil
    tokenWarned = false
    tokenExpiryReported = false
  }

  /// Settles the RENEW_TOKEN that was out (a TOKEN_RENEWED arrived, which proves the round
  /// trip): the new token stays with the expiry the server gave it, or, refused, the one
  /// before comes back. Returns whether it was accepted; nil (and nothing changes) when no
  /// RENEW_TOKEN was out.
  mutating func settleRenewal(_ answer: TokenRenewal, now: Instant) -> Bool? {
    guard let previous = renewal else { return nil }
    lastData = now
    renewal = nil
    guard answer.refused != nil else {
      setExpiry(timeLeftMs: answer.tokenTimeLeftMs, now: now)
      return true
    }
    token = previous.previousToken
    tokenExpiresAt = previous.previousExpiresAt
    tokenWarned = previous.previousWarned
    return false
  }

  /// The token expires `timeLeftMs` after `now` (0: never), as a server said.
  private mutating func setExpiry(timeLeftMs: UInt32, now: Instant) {
    tokenExpiresAt = timeLeftMs == 0 ? nil : now + .milliseconds(UInt64(timeLeftMs))
  }
}

/// The thresholds a link runs on, taken from a profile's config.
struct LinkTiming {
  var interruptedAfter: Interval
  var heartbeatInterval: Interval
  var retry: RetryPolicy
  /// The token's expiry is announced this long before it (the channel's will-expire
  /// warning); nil: never announced.
  var tokenWarningBefore: Interval?
  /// The token's own expiry counts while live too (the channel profile). Otherwise it
  /// counts only while attempting: a live session's token is the server's to judge.
  var tokenExpiresWhileLive: Bool

  /// - Throws: ``TetherError/invalidArgument`` when an interval or the retry base is zero,
  ///   the retry cap is below its base, or heartbeats are not more frequent than
  ///   `interruptedAfter` (a quiet but healthy link would read as interrupted between two
  ///   beats).
  func validate() throws(TetherError) {
    guard heartbeatInterval != .zero, retry.base != .zero, heartbeatInterval < interruptedAfter,
      retry.cap >= retry.base
    else { throw .invalidArgument }
  }
}

/// What the link does on the network.
enum LinkPhase {
  /// Nothing: no session, or one stopped in the profile's terminal state.
  case idle
  /// Sending attempts (JOINs, LOGINs): CONNECTING or RECONNECTING.
  case attempting(Effort)
  /// Accepted: CONNECTED, heartbeating.
  case live(nextHeartbeatAt: Instant)
}

/// A (re)connect effort: its attempts and the thresholds it runs against.
struct Effort {
  /// 1 for the first attempt of the effort, then 2, 3, ...; 0 before the first.
  var attempt: UInt32
  var nextAttemptAt: Instant
  /// The profile gives up here; nil: never.
  var endsAt: Instant?
  /// connection-lost falls due here; nil: never, or reported already.
  var lostAt: Instant?
}

/// How a session takes a new token from the app.
enum TokenChange {
  /// A RENEW_TOKEN carries it to the server now: its expiry is unknown until the answer,
  /// and the token the server last accepted is kept to go back to if it is refused.
  case sentToServer
  /// The next attempt carries it: the expiry already known keeps running until a server
  /// accepts it (the channel profile, while (re)joining).
  case forNextAttempt
  /// It replaces the token outright; its expiry is unknown until a server says.
  case afresh
}

/// What to go back to if the server refuses a renewed token.
struct PendingRenewal {
  var previousToken: Token
  var previousExpiresAt: Instant?
  var previousWarned: Bool
}

/// What both profiles count the same way (each session's public counters show them).
struct LinkCounters {
  /// Datagrams that did not decode.
  var malformed: UInt64 = 0
  /// Packets whose cookie was not this session's (or that came with no session).
  var foreign: UInt64 = 0
  /// Packets the session had no use for (the profile says which).
  var unexpected: UInt64 = 0
  /// JOINs or LOGINs sent.
  var attempts: UInt64 = 0
}
