// SPDX-License-Identifier: Apache-2.0
/// What the sessions of both profiles share, once: the proof of the round trip, the
/// (re)connect effort with its backoff and thresholds, heartbeats, the cookie, the token
/// with its expiry and renewal, time that never runs backwards, counters, the deadlines.
///
/// A session owns one and calls it; it never calls back. It answers with plain data (the
/// deadline due, an attempt's number, a heartbeat's sequence, a message that is this
/// session's) that the profile turns into its own packets, notifications and states. Not
/// generic: one copy of it serves both profiles in the Embedded library.
@_spi(Link) public struct LinkCore {
  let timing: LinkTiming
  /// What the link does now; the profile's state says why.
  var phase: LinkPhase = .idle
  /// The latest `now` seen: time never runs backwards inside a session.
  var clock: Instant = .zero
  /// When the last packet arrived that proves the server heard this session (the profile
  /// says which; the opening call before any). INTERRUPTED counts from it.
  var lastData: Instant = .zero
  /// The session's cookie, drawn at random when it opens; 0 while no session is open.
  var cookie: UInt64 = 0
  /// A server accepted this session once: later attempts are rejoins (relogins).
  var everAccepted = false
  var heartbeatSequence: UInt32 = 0
  var token = Token(checked: [])
  /// When the current token expires, if a server said so.
  var tokenExpiresAt: Instant?
  /// The app was warned of the expiry (the channel's will-expire), or acted on a warning.
  var tokenWarned = false
  /// The app was told the token expired (the login profile's, once per token).
  var tokenExpiryReported = false
  /// The app renewed the token and no answer has shown yet that the server took it: while
  /// attempting, the next attempts carry it; while live, a RENEW_TOKEN does, again with
  /// every heartbeat. What to go back to if the server refuses it.
  var renewal: PendingRenewal?
  /// An attempt of the current effort went out with a token older than ``token``: an
  /// accept may answer that attempt, so it does not show that the server took ``token``.
  var attemptsCarriedOlderToken = false
  /// The app replaced a token the server said had expired (the channel's renewal from
  /// FAILED/TOKEN_EXPIRED): until a server accepts, its sessions hold only the old one.
  var replacedExpiredToken = false
  var counters = LinkCounters()

  @inline(never)  // one copy for both profiles' creates
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

  /// Stops where it is (the profile's terminal state): no attempts, heartbeats or
  /// deadlines; the cookie and token stay until the app ends the session.
  mutating func stop() { phase = .idle }

  /// The session ends: nothing of it is kept, and no packet is its own any more.
  mutating func close() {
    stop()
    cookie = 0
    tokenExpiresAt = nil
    renewal = nil
    replacedExpiredToken = false
  }

  /// Attempting with a token the server did not hold: renewed while attempting (or live,
  /// then interrupted), or after it expired. A TOKEN_EXPIRED sent now is about the old one.
  var attemptsCarryNewerToken: Bool {
    guard case .attempting = phase else { return false }
    return renewal != nil || replacedExpiredToken
  }

  // MARK: - Receiving

  /// receive's prologue: the time, then the datagram's message if it decodes (else counted
  /// malformed, its error returned) and is this session's (else counted foreign).
  mutating func take(_ datagram: ArraySlice<UInt8>, now: Instant) -> (Message?, WireError?) {
    do throws(WireError) {
      return (take(try Packet.decode(datagram), now: now), nil)
    } catch {
      _ = tick(now)
      counters.malformed &+= 1
      return (nil, error)
    }
  }

  /// As above, for a packet already decoded.
  @inline(__always)  // one function fewer
  mutating func take(_ packet: consuming Packet, now: Instant) -> Message? {
    _ = tick(now)
    guard cookie != 0, packet.cookie == cookie else {
      counters.foreign &+= 1
      return nil
    }
    return packet.message
  }

  /// A server accepted this session: proof of the round trip, heartbeats (a repeated accept
  /// keeps their grid), the server's expiry. Returns whether one had accepted it before,
  /// and whether the profile must send the current token in a RENEW_TOKEN now.
  ///
  /// An accept that ends an effort settles a renewal when every attempt of the effort
  /// carried the renewed token. When some carried an older one, it may answer one of those
  /// (no accept says which token it took): the server may hold the older token, whose
  /// time left this is at worst. Then the renewed token goes to the server in a
  /// RENEW_TOKEN, as a renewal while live does, and a refusal of it goes back to the older
  /// token with this expiry; until the answer this expiry runs (its passing is the older
  /// token's, reported without ending anything while the renewal is out).
  mutating func accepted(tokenTimeLeftMs: UInt32, now: Instant) -> (again: Bool, renew: Bool) {
    let again = everAccepted
    everAccepted = true
    lastData = now
    setExpiry(timeLeftMs: tokenTimeLeftMs, now: now)
    tokenExpiryReported = false
    replacedExpiredToken = false
    var renew = false
    if renewal != nil, case .attempting = phase {
      if attemptsCarriedOlderToken {
        renewal?.previousExpiresAt = tokenExpiresAt
        renew = true
      } else {  // the server took the renewed token: its warning is to come
        renewal = nil
        tokenWarned = false
      }
    }
    if !isLive { phase = .live(nextHeartbeatAt: now + timing.heartbeatInterval) }
    return (again, renew)
  }

  // MARK: - Attempts

  /// Begins a (re)connect effort whose clock started at `since`: it ends `endsAfter` past
  /// it, connection-lost falls due `lostAfter` past it (nil: never). The first attempt next.
  mutating func startEffort(
    since: Instant, now: Instant, endsAfter: Interval?, lostAfter: Interval?
  ) {
    attemptsCarriedOlderToken = false  // every attempt of it carries the current token
    phase = .attempting(
      Effort(
        attempt: 0, nextAttemptAt: now, endsAt: endsAfter.map { since + $0 },
        lostAt: lostAfter.map { since + $0 }))
  }

  /// An attempt goes out now: the next is scheduled, placed in the backoff by `draw` (a
  /// random number). Returns the effort; nil unless attempting.
  @inline(never)  // both profiles' attempts
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

  // MARK: - Heartbeats

  /// The heartbeat due at `due` goes out now: returns its sequence. The next stays on the
  /// grid; after a late wake-up, the grid restarts from now.
  mutating func beat(due: Instant, now: Instant) -> UInt32 {
    heartbeatSequence &+= 1
    let next = due + timing.heartbeatInterval
    phase = .live(nextHeartbeatAt: next > now ? next : now + timing.heartbeatInterval)
    return heartbeatSequence
  }

  // MARK: - The token

  /// Takes `token` as ``TokenChange`` says.
  mutating func renew(with token: Token, _ change: TokenChange) {
    if change == .afresh {
      renewal = nil
    } else {
      // What the server holds until it takes the new token (kept from the first renewal
      // of a run of them: the ones between were never taken).
      if renewal == nil {
        renewal = PendingRenewal(
          previousToken: self.token, previousExpiresAt: tokenExpiresAt,
          previousWarned: tokenWarned)
      }
      if case .attempting = phase { attemptsCarriedOlderToken = true }
    }
    self.token = token
    // The app has acted on the old token's warning; its expiry keeps running.
    guard change != .forNextAttempt else {
      tokenWarned = true
      return
    }
    tokenExpiresAt = nil
    tokenWarned = false
    tokenExpiryReported = false
  }

  /// A TOKEN_RENEWED (proof of the round trip) settles the RENEW_TOKEN out: the new token
  /// stays with the server's expiry, or, refused, the one before comes back. Returns
  /// whether it was accepted; nil (nothing changes) when none was out.
  mutating func settleRenewal(_ answer: TokenRenewal, now: Instant) -> Bool? {
    guard let previous = renewal else { return nil }
    lastData = now
    renewal = nil
    guard answer.refused != nil else {
      setExpiry(timeLeftMs: answer.tokenTimeLeftMs, now: now)
      tokenWarned = false  // the new token's warning is to come
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
  /// The channel's will-expire warning this long before the expiry; nil: none.
  var tokenWarningBefore: Interval?
  /// The expiry counts while live too (channel); else only while attempting (login: a live
  /// session's token is the server's to judge).
  var tokenExpiresWhileLive: Bool

  /// - Throws: ``TetherError/invalidArgument`` when the heartbeat interval or the retry base
  ///   is zero, the cap is below the base, or heartbeats are not more frequent than
  ///   `interruptedAfter` (a quiet but healthy link would read as interrupted).
  func validate() throws(TetherError) {
    guard heartbeatInterval != .zero, retry.base != .zero, heartbeatInterval < interruptedAfter,
      retry.cap >= retry.base
    else { throw .invalidArgument }
  }
}

/// What the link does on the network: nothing (no session, or one stopped in the
/// profile's terminal state), attempts (CONNECTING, RECONNECTING), or heartbeats
/// (CONNECTED).
enum LinkPhase {
  case idle
  case attempting(Effort)
  case live(nextHeartbeatAt: Instant)
}

/// A (re)connect effort: its attempts (1 for the first, 0 before it), and the thresholds
/// it runs against: its end (the profile gives up) and connection-lost (nil: never, or
/// reported already).
struct Effort {
  var attempt: UInt32
  var nextAttemptAt: Instant
  var endsAt: Instant?
  var lostAt: Instant?
}

/// How a session takes a new token from the app.
enum TokenChange {
  /// In a RENEW_TOKEN now (live): expiry unknown until the answer; the last accepted token
  /// kept to go back to.
  case sentToServer
  /// In the next attempts (attempting): the known expiry runs until a server takes the new
  /// token (the channel reports its passing); the last accepted token kept to go back to.
  case forNextAttempt
  /// As ``forNextAttempt``, the known expiry dropped: the login reports no expiry of a
  /// token the app has replaced.
  case forNextAttemptExpiryUnknown
  /// Outright, for a session the server does not hold: its expiry unknown until a server
  /// says.
  case afresh
}

/// What to go back to if the server refuses a renewed token: the token it held and the
/// expiry it gave (the first accept's, if that may have answered an attempt with it).
struct PendingRenewal {
  var previousToken: Token
  var previousExpiresAt: Instant?
  var previousWarned: Bool
}

/// What both profiles count (their public counters): datagrams that did not decode,
/// packets of another cookie (or of no session), packets the session had no use for (the
/// profile says which), JOINs or LOGINs sent.
struct LinkCounters {
  var malformed: UInt64 = 0
  var foreign: UInt64 = 0
  var unexpected: UInt64 = 0
  var attempts: UInt64 = 0
}
