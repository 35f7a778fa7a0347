// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - JOIN and LOGIN: one admission for both profiles

/// What asks for a session: a channel to join (a channel INIT's request) or a user to log in
/// (a login INIT's), for an app, with the credential that must grant it (the opened token a
/// CONFIRM's ticket carries). Both profiles go through one admission.
struct SessionRequest {
  enum Ask {
    /// Join `channel` as `uid` (0: the edge assigns one).
    case join(ChannelName, uid: UInt32)
    /// Log in as `user`; `isRelogin` for a device that was logged in and is coming back.
    case login(UserID, isRelogin: Bool)
  }

  let appID: AppID
  let ask: Ask
  let credential: Credential

  init(appID: AppID, ask: Ask, credential: Credential) {
    self.appID = appID
    self.ask = ask
    self.credential = credential
  }

  var kind: SessionKind {
    switch ask {
    case .join: .channel
    case .login: .login
    }
  }

  /// What its token must grant for a new session.
  var grant: TokenGrant { ask.grant }
}

extension SessionRequest.Ask {
  /// What a token must grant for it.
  var grant: TokenGrant {
    switch self {
    case .join(let channel, let uid): .channel(channel, uid: uid)
    case .login(let user, _): .user(user)
    }
  }
}

/// What proves a request may have the session it asks for: a version 2 token the edge
/// opened with its certificate (`W`, docs/PROTOCOL.md §12.4), for this edge's app: what it
/// grants, and its expiry (unix seconds; 0: never). A CONFIRM carries them in its ticket, a
/// RENEW_TOKEN in the new `W`.
struct Credential {
  let grant: TokenGrant
  let expiry: UInt64

  static func opened(_ grant: TokenGrant, expiry: UInt64) -> Credential {
    Credential(grant: grant, expiry: expiry)
  }
}

extension TokenGrant {
  /// Whether a token granting this lets its holder have `wanted`: the same user id; the
  /// same channel with the same uid, or any uid if this is the wildcard (uid 0).
  func admits(_ wanted: TokenGrant) -> Bool {
    switch (self, wanted) {
    case (.channel(let channel, let uid), .channel(let wantedChannel, let wantedUID)):
      channel == wantedChannel && (uid == 0 || uid == wantedUID)
    case (.user(let user), .user(let wantedUser)): user == wantedUser
    default: false
    }
  }
}

/// Why a JOIN or LOGIN was not admitted; each profile answers it its own way.
enum Refusal {
  case invalidAppID, invalidChannelName, invalidToken, tokenExpired, banned
  /// The server holds ``EdgeConfig/maxSessions`` sessions.
  case full
  /// The channel has ``EdgeConfig/maxChannelMembers`` members (docs/PROTOCOL.md §12.12).
  case channelFull
  /// The app has ``EdgeConfig/maxAppSessions`` sessions (§12.12).
  case appFull
  /// A version 2 INIT whose authenticated list of versions lacks 2 (§12.6 rule 5): the
  /// device and the edge share no version, which no retry can change.
  case noCommonVersion

  init(_ error: TokenError) { self = error == .expired ? .tokenExpired : .invalidToken }

  /// A LOGIN's answer: LOGIN_REFUSE with the login error code of docs/BEHAVIOUR.md §2 (no channel
  /// name is refused to a login).
  var loginCode: UInt8 {
    switch self {
    // REJECTED
    case .full, .channelFull, .appFull, .noCommonVersion, .invalidChannelName: 2
    case .invalidAppID: 4
    case .invalidToken: 5
    case .tokenExpired: 6
    case .banned: 7  // NOT_AUTHORIZED
    }
  }

  /// Version 2's reason and detail (REFUSE_SEALED at an INIT, a sealed REFUSE or
  /// LOGIN_REFUSE at a CONFIRM, docs/PROTOCOL.md §12.6): a channel's are version 1's REFUSE
  /// reasons and 6 BANNED (version 1 answered a banned JOIN with KICK); a login's, the
  /// login error code. The detail tells a full channel (1) from a full app (2); 0 else.
  func secureAnswer(_ kind: SessionKind) -> (reason: UInt8, detail: UInt8) {
    let detail: UInt8 =
      switch self {
      case .channelFull: 1
      case .appFull: 2
      default: 0
      }
    guard kind == .channel else { return (loginCode, detail) }
    switch self {
    case .banned: return (6, detail)
    case .full, .channelFull, .appFull, .noCommonVersion:
      return (RefuseReason.rejected.rawValue, detail)
    case .invalidAppID: return (RefuseReason.invalidAppID.rawValue, detail)
    case .invalidChannelName: return (RefuseReason.invalidChannelName.rawValue, detail)
    case .invalidToken: return (RefuseReason.invalidToken.rawValue, detail)
    case .tokenExpired: return (RefuseReason.tokenExpired.rawValue, detail)
    }
  }
}

extension EdgeServer {
  /// A channel name starting with `$` is reserved for the server: a JOIN for one is
  /// refused with INVALID_CHANNEL_NAME. (The client checks the character set itself, so
  /// this is how a client can meet that refusal at all.)
  static func isReserved(_ channel: ChannelName) -> Bool { channel.bytes.first == 0x24 }

  /// Answers a JOIN or LOGIN, in this order (docs/PROTOCOL.md §6 lists it for LOGIN): app
  /// id (the source's join budget was charged before, at a version 2 CONFIRM's step 5,
  /// docs/PROTOCOL.md §12.6); reserved channel; the session held under the cookie (a version 2
  /// CONFIRM's new session id, to which a resume renamed the session it names; a resume of
  /// one ended with a KICK got the KICK again before: EdgeServer+Secure.swift), resumed if
  /// the request is for it (a JOIN for its channel and uid, a LOGIN of its user within the
  /// grace); token; ban; any other session under the cookie removed; a RELOGIN while the
  /// user is logged in elsewhere; server full; then a new session, taking the uid or user
  /// id over from its holder.
  ///
  /// A request whose token does not pass changes nothing the server holds: it gets one
  /// refusal (a sealed REFUSE of 36 bytes, less than the CONFIRM's 201), however it names a
  /// held cookie. Only a channel session's own address ends it, by rejoining with a token
  /// that no longer passes.
  mutating func admit(
    _ request: SessionRequest, cookie: UInt64, from address: PeerAddress, now: Instant,
    wallClock: UInt64
  ) {
    let held = table[cookie]
    guard request.appID == config.appID else {
      return refuse(request.kind, .invalidAppID, cookie: cookie, to: address)
    }
    if case .join(let channel, _) = request.ask, Self.isReserved(channel) {
      return refuse(.channel, .invalidChannelName, cookie: cookie, to: address)
    }
    if let held, resumes(held, request, now: now) {
      return resume(
        held, credential: request.credential, from: address, now: now, wallClock: wallClock)
    }
    let expiry: UInt64
    do throws(TokenError) {
      expiry = try verify(request.credential, for: request.grant, wallClock: wallClock)
    } catch {
      return refuse(request.kind, Refusal(error), cookie: cookie, to: address)
    }
    guard !isBanned(request.grant, wallClock) else {
      return refuse(request.kind, .banned, cookie: cookie, to: address)
    }
    if let held {
      // Not resumed: a login session silent past its grace, or another channel, uid or user.
      let lapsed = held.kind == .login && held.grant == request.grant
      end(cookie, cause: lapsed ? .graceEnded : .rejoinedElsewhere)
    }
    admitNew(
      request, cookie: cookie, from: address, tokenExpiry: expiry, now: now, wallClock: wallClock)
  }

  /// Whether `request` is for the session `held`: a JOIN for its channel, with its uid or
  /// uid 0; a LOGIN of its user within the online grace.
  private func resumes(_ held: SessionRecord, _ request: SessionRequest, now: Instant) -> Bool {
    switch (held.profile, request.ask) {
    case (.channel(let member), .join(let channel, let uid)):
      channel == member.channel && (uid == 0 || uid == member.uid)
    case (.login(let login), .login(let user, _)):
      login.userID == user && now.since(held.lastHeard) < config.loginGrace
    default: false
    }
  }

  /// A request for the session held under its cookie: its credential is checked against the
  /// session's grant (it may be a renewed token); if it passes, the session moves to the
  /// sender's address and takes the token, and nobody else notices. A login session's
  /// LOGIN_ACCEPT says RESUMED only once its client showed it had the first
  /// (``LoginState/confirmed``).
  private mutating func resume(
    _ held: SessionRecord, credential: Credential, from address: PeerAddress, now: Instant,
    wallClock: UInt64
  ) {
    let expiry: UInt64
    do throws(TokenError) {
      expiry = try verify(credential, for: held.grant, wallClock: wallClock)
    } catch {
      // REFUSE ends a channel session's client (§5.2), so from its own address it ends the
      // session too; a LOGIN whose token fails changes nothing (§6, rule 4).
      if held.kind == .channel, held.address == address {
        end(held.cookie, cause: error == .expired ? .tokenExpired : .tokenInvalid)
      }
      return refuse(held.kind, Refusal(error), cookie: held.cookie, to: address)
    }
    table.resume(held.cookie, at: address, now: now, tokenExpiry: expiry)
    guard let session = table[held.cookie] else { return }
    let resumed = session.login?.confirmed ?? true
    sendAccept(session, resumed: resumed, now: now, wallClock: wallClock)
    if let member = session.member {
      sendSnapshot(of: member.channel, kind: .alive, to: session, now: now)
    }
    if resumed { record(session.joinedEvent(resumed: true)) }
  }

  /// Admits a new session once its request passed the token and ban checks, taking its
  /// uid or user id over from the session holding it.
  private mutating func admitNew(
    _ request: SessionRequest, cookie: UInt64, from address: PeerAddress, tokenExpiry: UInt64,
    now: Instant, wallClock: UInt64
  ) {
    let previous = holder(of: request.ask)
    // A device that was away past the grace, while its user logged in elsewhere, does not
    // take the user back from the newer login: its RELOGIN is answered as the takeover
    // would have been (KICK REMOTE_LOGIN, 13 bytes), and it goes ABORTED.
    if case .login(_, isRelogin: true) = request.ask, previous != nil {
      counters.reloginsRefusedForNewerLogin &+= 1
      return outbox.send(.kick(.remoteLogin), cookie: cookie, to: address)
    }
    if previous == nil, let refusal = capRefusal(request.ask) {
      return refuse(request.kind, refusal, cookie: cookie, to: address)
    }
    if let previous, request.kind == .channel {
      // The uid changes hands: the members keep seeing it present, with no LEFT.
      end(previous, notice: .kick(.sameUID), cause: .replaced, announce: false)
    } else if let previous {
      end(previous, notice: .kick(.remoteLogin), cause: .remoteLogin)
    }
    let session = SessionRecord(
      cookie: cookie, address: address, lastHeard: now, tokenExpiry: tokenExpiry,
      profile: newProfile(request, now: now, wallClock: wallClock))
    ended[cookie] = nil  // the cookie is live again: no stale notice for it
    table.insert(session)
    fleetClaim(session, wallClock: wallClock)
    armTimers()
    sendAccept(session, resumed: false, now: now, wallClock: wallClock)
    if let member = session.member {
      cancelDeparture(of: member.uid, from: member.channel)
      sendSnapshot(of: member.channel, kind: .joined, to: session, now: now)
      let joined = PresenceEntry(uid: member.uid, kind: .joined, silentForMs: 0)
      broadcast(joined, in: member.channel, except: cookie)
    }
    record(session.joinedEvent(resumed: false))
  }

  /// The profile's part of a new session: its uid, given or assigned; or the next server
  /// session's number.
  private mutating func newProfile(_ request: SessionRequest, now: Instant, wallClock: UInt64)
    -> SessionRecord.Profile
  {
    switch request.ask {
    case .join(let channel, let asked):
      // Not a banned uid: the device would ask for it again on every rejoin.
      let uid =
        asked != 0
        ? asked
        : table.freeUID(in: channel) {
          isBanned(.channel(channel, uid: $0), wallClock)
            || fleet?.remoteMembers[channel]?.contains($0) == true
        }
      return .channel(ChannelMember(channel: channel, uid: uid, joinedAt: now))
    case .login(let user, _):
      defer { nextLoginSession &+= 1 }
      return .login(LoginState(userID: user, session: nextLoginSession))
    }
  }

  /// ACCEPT (with the uid) or LOGIN_ACCEPT (with the server session's number).
  mutating func sendAccept(
    _ session: SessionRecord, resumed: Bool, now: Instant, wallClock: UInt64
  ) {
    let serverTimeMs = Self.milliseconds(now)
    let timeLeft = Self.timeLeftMs(expiry: session.tokenExpiry, wallClock: wallClock)
    let accept: Message
    switch session.profile {
    case .channel(let member):
      accept = .accept(
        JoinAccept(
          uid: member.uid, serverTimeMs: serverTimeMs, tokenTimeLeftMs: timeLeft,
          resumed: resumed))
    case .login(let login):
      accept = .loginAccept(
        LoginAccept(
          serverTimeMs: serverTimeMs, tokenTimeLeftMs: timeLeft, resumed: resumed,
          session: login.session))
    }
    outbox.send(accept, cookie: session.cookie, to: session.address)
    // What a repeat of this ACCEPT says (the answer to its CONFIRM sent again, §12.6): the
    // same as this one, whatever admission did to the session before it.
    front.setResumed(resumed, of: session.cookie)
  }

  /// Answers a refused JOIN (counted in ``EdgeCounters/refusedJoins``) or LOGIN
  /// (``EdgeCounters/refusedLogins``).
  private mutating func refuse(
    _ kind: SessionKind, _ refusal: Refusal, cookie: UInt64, to address: PeerAddress
  ) {
    switch kind {
    case .channel: counters.refusedJoins &+= 1
    case .login: counters.refusedLogins &+= 1
    }
    outbox.send(refusal, kind, cookie: cookie, to: address)
  }

  /// Checks `credential` for `grant` at `wallClock` (unix seconds).
  /// - Returns: the token's expiry (unix seconds; 0: never).
  /// - Throws: ``TokenError/invalid`` unless it grants `grant`; ``TokenError/expired`` when
  ///   it does but its expiry is not after `wallClock`.
  func verify(_ credential: Credential, for grant: TokenGrant, wallClock: UInt64)
    throws(TokenError) -> UInt64
  {
    guard credential.grant.admits(grant) else { throw .invalid }
    guard credential.expiry == 0 || credential.expiry > wallClock else { throw .expired }
    return credential.expiry
  }

  /// The session that holds what `ask` asks for (the uid in the channel, or the user id),
  /// which a new session would take over; nil for uid 0 (a fresh one is assigned).
  func holder(of ask: SessionRequest.Ask) -> UInt64? {
    switch ask {
    case .join(_, uid: 0): nil
    case .join(let channel, let uid): table.channels.members(of: channel)[uid]
    case .login(let user, _): table.users[user]
    }
  }

  /// Why a session that takes over nobody's would be past a cap: the server's
  /// ``EdgeConfig/maxSessions``, the channel's members, the app's sessions (one app per
  /// edge: all of them). Nil when it fits.
  func capRefusal(_ ask: SessionRequest.Ask) -> Refusal? {
    guard table.count < config.maxSessions else { return .full }
    if case .join(let channel, _) = ask,
      table.channels.members(of: channel).count >= config.maxChannelMembers
    {
      return .channelFull
    }
    return table.count < config.maxAppSessions ? nil : .appFull
  }

  /// A ban of this (channel, uid) or user id is in force. A JOIN with uid 0 is never
  /// banned: it asks for a fresh uid, and is not given a banned one.
  func isBanned(_ grant: TokenGrant, _ wallClock: UInt64) -> Bool {
    let until: UInt64?
    switch grant {
    case .channel(let channel, let uid):
      until = uid == 0 ? nil : bans[MemberKey(channel: channel, uid: uid)]
    case .user(let user): until = userBans[user]
    }
    return until.map { $0 > wallClock } ?? false
  }
}
