import TetherCore

/// What LOGIN_REFUSE says: the login error codes of docs/BEHAVIOUR.md §2 the server sends.
enum LoginRefusal: UInt8 {
  /// The source address is past its ``JoinLimit``, or the server is full.
  case rejected = 2
  case invalidAppID = 4
  case invalidToken = 5
  case tokenExpired = 6
  /// The user id is banned by the admin (KICK_USER with ban seconds).
  case notAuthorized = 7

  init(_ error: TokenError) {
    switch error {
    case .invalid: self = .invalidToken
    case .expired: self = .tokenExpired
    }
  }
}

// MARK: - Login sessions (docs/PROTOCOL.md §5b)

extension EdgeServer {
  /// Answers a LOGIN, in this order: the source's join limit (unless it comes from the
  /// session it names, at that session's address); app id; the KICK that ended a session
  /// under this cookie, repeated; token; ban; the session held under the cookie for this
  /// user (resumed, unless silent past its grace); a RELOGIN while the user is logged in
  /// elsewhere (KICK REMOTE_LOGIN: it does not take the user back); server full; then a new
  /// session, taking the user over from its other session if it has one (KICK
  /// REMOTE_LOGIN).
  ///
  /// A LOGIN whose token does not pass changes nothing the server holds, from any address:
  /// it gets one LOGIN_REFUSE (13 bytes, less than any LOGIN).
  mutating func login(
    _ request: LoginRequest, cookie: UInt64, from address: PeerAddress, now: Instant,
    wallClock: UInt64
  ) {
    let fromHolder = logins[cookie]?.address == address
    guard fromHolder || joinLimiter.take(from: address, now: now) else {
      counters.joinsLimited &+= 1
      return refuseLogin(.rejected, cookie: cookie, to: address)
    }
    guard request.appID == config.appID else {
      return refuseLogin(.invalidAppID, cookie: cookie, to: address)
    }
    // A session ended by a KICK (REMOTE_LOGIN, BANNED) whose KICK was lost: its client is
    // still logging in again under the cookie. (After TOKEN_EXPIRED the LOGIN's own token
    // decides.)
    if logins[cookie] == nil, case .kick? = ended[cookie]?.notice,
      repeatNotice(cookie, to: address)
    {
      return
    }
    let expiry: UInt64
    do throws(TokenError) {
      expiry = try signer.verify(
        request.token.bytes, for: .user(request.userID), wallClock: wallClock)
    } catch {
      return refuseLogin(LoginRefusal(error), cookie: cookie, to: address)
    }
    guard !isBanned(request.userID, wallClock) else {
      return refuseLogin(.notAuthorized, cookie: cookie, to: address)
    }
    if let held = logins[cookie] {
      if held.userID == request.userID, now.since(held.lastHeard) < config.loginGrace {
        return resumeLogin(held, expiry: expiry, from: address, now: now, wallClock: wallClock)
      }
      let cause: EdgeEvent.LeaveCause =
        held.userID == request.userID ? .graceEnded : .rejoinedElsewhere
      removeLogin(cookie, cause: cause)
    }
    let previous = logins.cookie(of: request.userID)
    // A device that was away past the grace, while its user logged in elsewhere, does not
    // take the user back from the newer login: its RELOGIN is answered as the takeover
    // would have been (KICK REMOTE_LOGIN, 13 bytes), and it goes ABORTED.
    if request.isRelogin, previous != nil {
      counters.reloginsRefusedForNewerLogin &+= 1
      return outbox.send(.kick(.remoteLogin), cookie: cookie, to: address)
    }
    guard previous != nil || table.count + logins.count < config.maxSessions else {
      return refuseLogin(.rejected, cookie: cookie, to: address)
    }
    if let previous {
      endLogin(previous, with: .kick(.remoteLogin), cause: .remoteLogin)
    }
    ended[cookie] = nil  // the cookie is live again: no stale notice for it
    let session = nextLoginSession
    nextLoginSession &+= 1
    logins.insert(
      LoginRecord(
        cookie: cookie, userID: request.userID, session: session, address: address, now: now,
        tokenExpiry: expiry))
    armTimers()
    sendLoginAccept(
      expiry: expiry, resumed: false, session: session, cookie: cookie, to: address, now: now,
      wallClock: wallClock)
    record(.loggedIn(user: request.userID, resumed: false))
  }

  /// A LOGIN for the session held under its cookie, within the grace: it moves to the
  /// sender's address and takes the token; nobody else notices. RESUMED only once the client
  /// showed it had the first LOGIN_ACCEPT (``LoginRecord/confirmed``).
  private mutating func resumeLogin(
    _ held: LoginRecord, expiry: UInt64, from address: PeerAddress, now: Instant,
    wallClock: UInt64
  ) {
    logins.move(held.cookie, to: address, at: now)
    logins.setTokenExpiry(expiry, of: held.cookie)
    sendLoginAccept(
      expiry: expiry, resumed: held.confirmed, session: held.session, cookie: held.cookie,
      to: address, now: now, wallClock: wallClock)
    if held.confirmed { record(.loggedIn(user: held.userID, resumed: true)) }
  }

  private mutating func sendLoginAccept(
    expiry: UInt64, resumed: Bool, session: UInt32, cookie: UInt64, to address: PeerAddress,
    now: Instant, wallClock: UInt64
  ) {
    let accept = LoginAccept(
      serverTimeMs: Self.milliseconds(now),
      tokenTimeLeftMs: Self.timeLeftMs(expiry: expiry, wallClock: wallClock), resumed: resumed,
      session: session)
    outbox.send(.loginAccept(accept), cookie: cookie, to: address)
  }

  private mutating func refuseLogin(
    _ refusal: LoginRefusal, cookie: UInt64, to address: PeerAddress
  ) {
    counters.refusedLogins &+= 1
    outbox.send(.loginRefuse(code: refusal.rawValue), cookie: cookie, to: address)
  }

  func isBanned(_ user: UserID, _ wallClock: UInt64) -> Bool {
    guard let until = userBans[user] else { return false }
    return until > wallClock
  }

  // MARK: - Datagrams of a logged-in session

  /// HEARTBEAT_ACK, then the oldest member events the client has not taken (one datagram).
  mutating func loginHeartbeat(
    sequence: UInt32, eventsReceived: UInt32, cookie: UInt64, from address: PeerAddress,
    now: Instant
  ) {
    guard heardLogin(cookie, from: address, now: now) != nil else {
      return answerUnheard(cookie, to: address)
    }
    let ack = Message.heartbeatAck(sequence: sequence, serverTimeMs: Self.milliseconds(now))
    outbox.send(ack, cookie: cookie, to: address)
    let batch = logins.update(cookie) { session -> MemberEvents? in
      session.confirmed = true
      session.events.acknowledge(eventsReceived)
      return session.events.batch(from: session.events.firstSequence)
    }
    if let batch = batch ?? nil {
      counters.memberEventsResent &+= 1
      outbox.send(.memberEvents(batch), cookie: cookie, to: address)
    }
  }

  /// Applies the operation if its sequence is the next one (so each is applied once, in
  /// order), and acknowledges the highest applied either way.
  mutating func channelOperation(
    _ operation: ChannelOperation, cookie: UInt64, from address: PeerAddress, now: Instant
  ) {
    guard let session = heardLogin(cookie, from: address, now: now) else {
      return answerUnheard(cookie, to: address)
    }
    var applied = session.appliedOperations
    if operation.sequence == applied &+ 1 {
      applied = operation.sequence
      logins.update(cookie) { $0.appliedOperations = applied }
      apply(operation, user: session.userID, cookie: cookie)
    } else {
      counters.channelOperationsUnordered &+= 1
    }
    logins.update(cookie) { $0.confirmed = true }
    outbox.send(
      .channelAck(session: session.session, sequence: applied), cookie: cookie, to: address)
  }

  private mutating func apply(_ operation: ChannelOperation, user: UserID, cookie: UInt64) {
    switch operation.kind {
    case .join:
      switch logins.join(operation.channel, cookie: cookie) {
      case .joined?:
        record(.channelJoined(channel: operation.channel, user: user))
        announce(.joined, of: user, in: operation.channel, except: cookie)
      case .full?: counters.channelOperationsOverLimit &+= 1
      case .alreadyMember?, nil: break
      }
    case .leave:
      guard logins.leave(operation.channel, cookie: cookie) else { return }
      record(.channelLeft(channel: operation.channel, user: user))
      announce(.left, of: user, in: operation.channel, except: cookie)
    }
  }

  /// Ends the session at once; nothing answers (the client sends LOGOUT twice).
  mutating func logout(cookie: UInt64, from address: PeerAddress, now: Instant) {
    guard heardLogin(cookie, from: address, now: now) != nil else {
      counters.unknownSession &+= 1
      return
    }
    removeLogin(cookie, cause: .quit)
  }

  /// RENEW_TOKEN under a login session's cookie: TOKEN_RENEWED, as for a channel session.
  mutating func renewLogin(
    _ token: Token, cookie: UInt64, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    guard let session = heardLogin(cookie, from: address, now: now) else {
      return answerUnheard(cookie, to: address)
    }
    let renewal: TokenRenewal
    do throws(TokenError) {
      let expiry = try signer.verify(token.bytes, for: .user(session.userID), wallClock: wallClock)
      logins.setTokenExpiry(expiry, of: cookie)
      renewal = TokenRenewal(
        refused: nil, tokenTimeLeftMs: Self.timeLeftMs(expiry: expiry, wallClock: wallClock))
    } catch {
      renewal = TokenRenewal(refused: Self.refuseReason(error), tokenTimeLeftMs: 0)
    }
    outbox.send(.tokenRenewed(renewal), cookie: cookie, to: address)
  }

  /// The session under `cookie` if it is at `address` and within its grace (then heard at
  /// `now`); from another address the datagram is counted, and a session past its grace is
  /// removed here rather than at the next tick, so the grace ends exactly on time.
  private mutating func heardLogin(_ cookie: UInt64, from address: PeerAddress, now: Instant)
    -> LoginRecord?
  {
    switch logins.hear(cookie, from: address, at: now, grace: config.loginGrace) {
    case .heard(let record): return record
    case .elsewhere:
      counters.wrongAddress &+= 1
      return nil
    case .lapsed:
      removeLogin(cookie, cause: .graceEnded)
      return nil
    case .unknown: return nil
    }
  }

  /// A LOGIN_HEARTBEAT, CHANNEL_OPERATION or RENEW_TOKEN that no session heard: the notice
  /// of a session the server ended under the cookie, or SESSION_UNKNOWN (both at most 13
  /// bytes; the smallest of these datagrams is 14).
  private mutating func answerUnheard(_ cookie: UInt64, to address: PeerAddress) {
    if repeatNotice(cookie, to: address) { return }
    sessionUnknown(cookie, to: address)
  }

  // MARK: - Ending login sessions

  /// Sends `notice` to the session under `cookie`, ends it (its channels' other members get
  /// *left*), and repeats the notice to later datagrams under the cookie for forget-after.
  mutating func endLogin(_ cookie: UInt64, with notice: Message, cause: EdgeEvent.LeaveCause?) {
    guard let session = logins[cookie] else { return }
    outbox.send(notice, cookie: cookie, to: session.address)
    if ended.count < config.maxSessions {
      ended[cookie] = EndedSession(notice: notice, until: clock + config.forgetAfter)
    }
    removeLogin(cookie, cause: cause)
  }

  /// Removes a login session; the other members of each of its channels get a *left* event.
  /// `cause` nil: the caller recorded the event itself.
  mutating func removeLogin(_ cookie: UInt64, cause: EdgeEvent.LeaveCause?) {
    guard let removed = logins.remove(cookie) else { return }
    pendingPushes[cookie] = nil
    if let cause { record(.loggedOut(user: removed.userID, cause: cause)) }
    for channel in removed.channels {
      announce(.left, of: removed.userID, in: channel, except: cookie)
    }
  }

  /// Removes every login session silent for its whole grace (the ones heard from again are
  /// removed when heard: ``heardLogin(_:from:now:)``).
  mutating func endLapsedLogins(now: Instant) {
    let lapsed = logins.sessions.values.filter { now.since($0.lastHeard) >= config.loginGrace }
    for session in lapsed.sorted(by: { $0.cookie < $1.cookie }) {
      removeLogin(session.cookie, cause: .graceEnded)
    }
  }

  /// TOKEN_EXPIRED to every login session whose token expired by `wallClock` (not renewed),
  /// which ends it; user bans that ended are dropped.
  mutating func expireLoginTokens(wallClock: UInt64) {
    let expired = logins.sessions.values.filter {
      $0.tokenExpiry != 0 && $0.tokenExpiry <= wallClock
    }
    for session in expired.sorted(by: { $0.cookie < $1.cookie }) {
      endLogin(session.cookie, with: .tokenExpired, cause: .tokenExpired)
    }
    userBans = userBans.filter { $0.value > wallClock }
  }

  // MARK: - Member events

  /// Queues a `kind` event about `user` in `channel` for every other member of it. A
  /// session whose queue is full is ended once the current input is handled.
  private mutating func announce(
    _ kind: MemberEvent.Kind, of user: UserID, in channel: ChannelName, except excluded: UInt64
  ) {
    let entry = MemberEvent.Entry(kind: kind, channel: channel, userID: user)
    for (_, cookie) in logins.rosters.members(of: channel) where cookie != excluded {
      guard let sequence = logins.enqueue(entry, for: cookie) else {
        overflowed.append(cookie)
        continue
      }
      if pendingPushes[cookie] == nil { pendingPushes[cookie] = sequence }
    }
  }

  /// What one input produced, in order: the outbox, then the sessions ended by a full event
  /// queue, then each login session's new member events (once each, in as few MEMBER_EVENTS
  /// as they fit, by cookie order). Only a LOGIN_HEARTBEAT sends events again.
  mutating func takeOutput() -> [Outgoing] {
    while let cookie = overflowed.popLast() {
      guard logins[cookie] != nil else { continue }
      counters.eventQueueOverflows &+= 1
      removeLogin(cookie, cause: .eventQueueFull)
    }
    if !pendingPushes.isEmpty {
      for (cookie, first) in pendingPushes.sorted(by: { $0.key < $1.key }) {
        guard let session = logins[cookie] else { continue }
        var sequence = first
        while let batch = session.events.batch(from: sequence) {
          outbox.send(.memberEvents(batch), cookie: cookie, to: session.address)
          sequence &+= UInt32(batch.count)
        }
      }
      pendingPushes.removeAll(keepingCapacity: true)
    }
    return outbox.take()
  }
}
