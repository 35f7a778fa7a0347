// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - What every session goes through, whatever its profile

extension EdgeServer {
  /// The session under `cookie` that a datagram of `kind` (nil: of either profile) from
  /// `address` shows was heard at `now`. Nil, with nothing recorded, for another profile's
  /// session, and for one at another address: a cookie can be seen on the path, so that
  /// datagram proves nothing (counted; it gets no more than SESSION_UNKNOWN, which is
  /// smaller than it: docs/PROTOCOL.md, "Security"). A login session silent for its whole
  /// grace is ended here rather than at the next tick, so the grace ends on time.
  mutating func hear(
    _ cookie: UInt64, _ kind: SessionKind?, from address: PeerAddress, now: Instant
  ) -> SessionRecord? {
    guard let held = table[cookie], held.kind == (kind ?? held.kind) else { return nil }
    guard held.address == address else {
      counters.wrongAddress &+= 1
      return nil
    }
    if held.kind == .login, now.since(held.lastHeard) >= config.loginGrace {
      end(cookie, cause: .graceEnded)
      return nil
    }
    return table.markHeard(cookie, at: now)
  }

  /// A HEARTBEAT, LOGIN_HEARTBEAT, CHANNEL_OPERATION or RENEW_TOKEN that no session heard:
  /// the notice of a session the server ended under the cookie, or SESSION_UNKNOWN (both at
  /// most 13 bytes; the smallest of these datagrams is 14).
  mutating func answerUnheard(_ cookie: UInt64, to address: PeerAddress) {
    if repeatNotice(cookie, to: address) { return }
    counters.unknownSession &+= 1
    outbox.send(.sessionUnknown, cookie: cookie, to: address)
  }

  /// LEAVE or LOGOUT: from the session's own address it ends at once, and nothing answers
  /// (the client sends it twice).
  mutating func quit(_ cookie: UInt64, _ kind: SessionKind, from address: PeerAddress, now: Instant)
  {
    guard hear(cookie, kind, from: address, now: now) != nil else {
      counters.unknownSession &+= 1
      return
    }
    end(cookie, cause: .quit)
  }

  /// RENEW_TOKEN: TOKEN_RENEWED, with the new token's time left if it grants what the
  /// session's did (its expiry is the session's from now on), or why not (the old one
  /// stays). Version 2's keys stay: only the expiry moves.
  /// A nil credential is a new token that is no token at all (version 2: a `W` that does not
  /// open), refused INVALID_TOKEN.
  mutating func renew(_ credential: Credential?, for session: SessionRecord, wallClock: UInt64) {
    let renewal: TokenRenewal
    do throws(TokenError) {
      guard let credential else { throw .invalid }
      let expiry = try verify(credential, for: session.grant, wallClock: wallClock)
      table.setTokenExpiry(expiry, of: session.cookie)
      renewal = TokenRenewal(
        refused: nil, tokenTimeLeftMs: Self.timeLeftMs(expiry: expiry, wallClock: wallClock))
    } catch {
      renewal = TokenRenewal(refused: Self.refuseReason(error), tokenTimeLeftMs: 0)
    }
    outbox.send(.tokenRenewed(renewal), cookie: session.cookie, to: session.address)
  }

  /// Ends the session under `cookie`. A `notice` (KICK, TOKEN_EXPIRED) goes to its client
  /// and answers later datagrams under the cookie for forget-after (while fewer than
  /// `maxSessions` are remembered). The end is logged with `cause` (nil: the caller logged
  /// it). With `announce` the others hear it left: a channel's members get a LEFT entry,
  /// repeated in the next digests; the members of a login session's channels, a *left*
  /// event each.
  mutating func end(
    _ cookie: UInt64, notice: Message? = nil, cause: EdgeEvent.LeaveCause?, announce: Bool = true
  ) {
    guard let removed = table.remove(cookie) else { return }
    if front.holds(cookie) { front.retiring.append(cookie) }
    fleetRelease(removed, announce: announce)
    if let notice {
      outbox.send(notice, cookie: cookie, to: removed.address)
      if ended.count < config.maxSessions {
        ended[cookie] = EndedSession(notice: notice, until: clock + config.forgetAfter)
      }
    }
    if let cause { record(removed.leftEvent(cause)) }
    switch removed.profile {
    case .channel(let member) where announce:
      broadcast(PresenceEntry(uid: member.uid, kind: .left, silentForMs: 0), in: member.channel)
      recordDeparture(of: member.uid, from: member.channel)
    case .login(let login):
      pendingPushes[cookie] = nil
      guard announce else { return }
      for channel in login.channels {
        self.announce(.left, of: login.userID, in: channel, except: cookie)
      }
    case .channel: break
    }
  }

  /// Ends every session silent past its profile's limit (of `kind` only, if given), in
  /// cookie order. A channel session is forgotten silently after forget-after, on the
  /// presence grid: its members judged it from its age in the digests (DROPPED at 20 s)
  /// long before. A login session ends with its online grace, and the members of its
  /// channels get *left* (docs/PROTOCOL.md §6, "The online grace").
  mutating func endSilentSessions(now: Instant, only kind: SessionKind? = nil) {
    let silent = table.records.values.filter {
      $0.kind == (kind ?? $0.kind) && now.since($0.lastHeard) >= silenceLimit(of: $0.kind)
    }
    for session in silent.sorted(by: { $0.cookie < $1.cookie }) {
      let login = session.kind == .login
      end(session.cookie, cause: login ? .graceEnded : .forgotten, announce: login)
    }
  }

  /// How long a session of `kind` may be silent: forget-after, or the online grace.
  func silenceLimit(of kind: SessionKind) -> Interval {
    kind == .login ? config.loginGrace : config.forgetAfter
  }

  /// TOKEN_EXPIRED to every session whose token expired by `wallClock` (not renewed), which
  /// ends it, in cookie order; bans that ended are dropped.
  mutating func expireTokens(wallClock: UInt64) {
    let expired = table.records.values.filter {
      $0.tokenExpiry != 0 && $0.tokenExpiry <= wallClock
    }
    for session in expired.sorted(by: { $0.cookie < $1.cookie }) {
      end(session.cookie, notice: .tokenExpired, cause: .tokenExpired)
    }
    bans = bans.filter { $0.value > wallClock }
    userBans = userBans.filter { $0.value > wallClock }
  }
}
