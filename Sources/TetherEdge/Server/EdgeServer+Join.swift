import TetherCore

// MARK: - JOIN

extension EdgeServer {
  /// A channel name starting with `$` is reserved for the server: a JOIN for one is
  /// refused with INVALID_CHANNEL_NAME. (The client checks the character set itself, so
  /// this is how a client can meet that refusal at all.)
  static func isReserved(_ channel: ChannelName) -> Bool { channel.bytes.first == 0x24 }

  /// Answers a JOIN, in this order: the source's join limit (unless it comes from the
  /// session it names, at that session's address); app id; reserved channel; the session
  /// already held under the cookie (resumed); token; ban; server full; then a new session,
  /// taking the uid over from another cookie if one holds it.
  ///
  /// A JOIN whose token does not pass changes nothing the server holds: it gets one REFUSE
  /// (13 bytes, less than any JOIN), however it names a held cookie. Only the session's own
  /// address can end it by rejoining with a token that no longer passes.
  mutating func join(
    _ request: JoinRequest, cookie: UInt64, from address: PeerAddress, now: Instant,
    wallClock: UInt64
  ) {
    let fromHolder = table[cookie]?.address == address
    guard fromHolder || joinLimiter.take(from: address, now: now) else {
      counters.joinsLimited &+= 1
      return
    }
    guard request.appID == config.appID else {
      return refuse(.invalidAppID, cookie: cookie, to: address)
    }
    guard !Self.isReserved(request.channel) else {
      return refuse(.invalidChannelName, cookie: cookie, to: address)
    }
    // A rejoin of a session the server ended (its KICK or TOKEN_EXPIRED was lost).
    if table[cookie] == nil, repeatNotice(cookie, to: address) { return }
    if let held = table[cookie], held.channel == request.channel,
      request.uid == 0 || request.uid == held.uid
    {
      return resume(
        held, token: request.token, from: address, ownAddress: fromHolder, now: now,
        wallClock: wallClock)
    }
    let expiry: UInt64
    do throws(TokenError) {
      expiry = try signer.verify(
        request.token.bytes, for: .channel(request.channel, uid: request.uid),
        wallClock: wallClock)
    } catch {
      return refuse(Self.refuseReason(error), cookie: cookie, to: address)
    }
    if table[cookie] != nil {
      removeSession(cookie, cause: .rejoinedElsewhere, announce: true)
    }
    admit(
      request, cookie: cookie, from: address, tokenExpiry: expiry, now: now, wallClock: wallClock)
  }

  /// A JOIN under a cookie the server holds: same uid, no one else notified. The token is
  /// checked again (it may be a renewed one); if it no longer passes and the JOIN came from
  /// the session's own address, the session ends; from another address it is only refused.
  private mutating func resume(
    _ held: SessionRecord, token: Token, from address: PeerAddress, ownAddress: Bool,
    now: Instant, wallClock: UInt64
  ) {
    let expiry: UInt64
    do throws(TokenError) {
      let grant = TokenGrant.channel(held.channel, uid: held.uid)
      expiry = try signer.verify(token.bytes, for: grant, wallClock: wallClock)
    } catch {
      if ownAddress {
        let cause: EdgeEvent.LeaveCause = error == .expired ? .tokenExpired : .tokenInvalid
        removeSession(held.cookie, cause: cause, announce: true)
      }
      return refuse(Self.refuseReason(error), cookie: held.cookie, to: address)
    }
    table.move(held.cookie, to: address, at: now)
    table.setTokenExpiry(expiry, of: held.cookie)
    sendAccept(
      uid: held.uid, expiry: expiry, resumed: true, cookie: held.cookie, to: address, now: now,
      wallClock: wallClock)
    sendSnapshot(of: held.channel, kind: .alive, to: held.cookie, at: address, now: now)
    record(.joined(channel: held.channel, uid: held.uid, resumed: true))
  }

  /// A new session, once the token passed.
  private mutating func admit(
    _ request: JoinRequest, cookie: UInt64, from address: PeerAddress, tokenExpiry: UInt64,
    now: Instant, wallClock: UInt64
  ) {
    let channel = request.channel
    if request.uid != 0, isBanned(MemberKey(channel: channel, uid: request.uid), wallClock) {
      counters.refusedJoins &+= 1
      return outbox.send(.kick(.banned), cookie: cookie, to: address)
    }
    let previous = request.uid == 0 ? nil : table.holder(of: request.uid, in: channel)
    guard previous != nil || table.count + logins.count < config.maxSessions else {
      return refuse(.rejected, cookie: cookie, to: address)
    }
    if let previous {
      // The uid changes hands: the members keep seeing it present, with no LEFT.
      end(previous, with: .kick(.sameUID), cause: .replaced, announce: false)
    }
    let uid = request.uid == 0 ? table.freeUID(in: channel) : request.uid
    table.insert(
      SessionRecord(
        cookie: cookie, channel: channel, uid: uid, address: address, lastHeard: now,
        tokenExpiry: tokenExpiry, joinedAt: now))
    cancelDeparture(of: uid, from: channel)
    armTimers()
    sendAccept(
      uid: uid, expiry: tokenExpiry, resumed: false, cookie: cookie, to: address, now: now,
      wallClock: wallClock)
    sendSnapshot(of: channel, kind: .joined, to: cookie, at: address, now: now)
    broadcast(PresenceEntry(uid: uid, kind: .joined, silentForMs: 0), in: channel, except: cookie)
    record(.joined(channel: channel, uid: uid, resumed: false))
  }

  private mutating func sendAccept(
    uid: UInt32, expiry: UInt64, resumed: Bool, cookie: UInt64, to address: PeerAddress,
    now: Instant, wallClock: UInt64
  ) {
    let accept = JoinAccept(
      uid: uid, serverTimeMs: Self.milliseconds(now),
      tokenTimeLeftMs: Self.timeLeftMs(expiry: expiry, wallClock: wallClock), resumed: resumed)
    outbox.send(.accept(accept), cookie: cookie, to: address)
  }

  /// The other members of `channel`, as `kind` entries with their ages, to one session.
  private mutating func sendSnapshot(
    of channel: ChannelName, kind: PresenceEntry.Kind, to cookie: UInt64,
    at address: PeerAddress, now: Instant
  ) {
    let entries = presenceEntries(of: channel, kind: kind, now: now, except: cookie)
    for template in Outbox.presenceTemplates(entries) {
      outbox.send(template: template, cookie: cookie, to: address)
    }
  }

  /// `channel`'s members but `excluded`, sorted by uid, each with its silence.
  func presenceEntries(
    of channel: ChannelName, kind: PresenceEntry.Kind, now: Instant, except excluded: UInt64?
  ) -> [PresenceEntry] {
    var entries: [PresenceEntry] = []
    let announced = Interval(
      nanoseconds: config.presenceInterval.nanoseconds &* Self.departureRepeats)
    for (uid, cookie) in table.members(of: channel) where cookie != excluded {
      guard let member = table[cookie] else { continue }
      let silent = now.since(member.lastHeard).clampedMilliseconds
      // A member that joined lately is JOINED, not ALIVE, in as many digests as a LEFT
      // is repeated: a peer that lost the JOINED broadcast, and that refuses ALIVE for a
      // uid it saw QUIT lately, still sees it back at the next digest.
      let fresh = kind == .alive && now.since(member.joinedAt) < announced
      entries.append(PresenceEntry(uid: uid, kind: fresh ? .joined : kind, silentForMs: silent))
    }
    entries.sort { $0.uid < $1.uid }
    return entries
  }

  private mutating func refuse(_ reason: RefuseReason, cookie: UInt64, to address: PeerAddress) {
    counters.refusedJoins &+= 1
    outbox.send(.refuse(reason), cookie: cookie, to: address)
  }

  func isBanned(_ member: MemberKey, _ wallClock: UInt64) -> Bool {
    guard let until = bans[member] else { return false }
    return until > wallClock
  }
}
