import TetherCore

/// The edge server's logic as a value: no socket, no clock (sans-IO, like the client's
/// `ChannelSession`). The loop feeds it datagrams and the time, sends what it returns, and
/// calls ``tick(now:wallClock:)`` when ``nextDeadline`` passes.
///
/// Two clocks come in with every call: `now`, monotonic (presence ages, silence, the
/// server's timers), and `wallClock`, unix seconds (token expiries, bans, admin requests).
///
/// Sessions are keyed by the cookie in the packet header; a channel's members by uid. Login
/// sessions (the messaging profile, EdgeServer+Login.swift) by cookie and by user id, their
/// channels' members by user id. Nothing a datagram holds can make it trap, and what it
/// keeps per peer is bounded: a fixed-size record per channel session, and per login session
/// a record with at most 16 channels and 256 queued member events; at most
/// ``EdgeConfig/maxSessions`` sessions of both kinds together.
public struct EdgeServer {
  public let config: EdgeConfig
  let signer: TokenSigner
  var table = SessionTable()
  /// (channel, uid) → banned until (unix seconds).
  var bans: [MemberKey: UInt64] = [:]
  /// Login sessions and their channels (EdgeServer+Login.swift).
  var logins = LoginTable()
  /// User id → banned until (unix seconds): its LOGINs get LOGIN_REFUSE 7.
  var userBans: [UserID: UInt64] = [:]
  /// Login sessions that got member events during the current input → the number of the
  /// first: they are sent once the input is handled (``takeOutput()``).
  var pendingPushes: [UInt64: UInt32] = [:]
  /// Login sessions whose event queue overflowed during the current input: ended once the
  /// input is handled.
  var overflowed: [UInt64] = []
  /// Nonces of admin requests taken → when they can be forgotten (unix seconds).
  var takenNonces: [UInt64: UInt64] = [:]
  /// Sessions ended with a notice, by cookie (EdgeServer+Notices.swift).
  var ended: [UInt64: EndedSession] = [:]
  /// LEFT entries still carried in each channel's digests, and how many in all.
  var departures: [ChannelName: [Departure]] = [:]
  var departureCount = 0
  var nextPresenceAt: Instant?
  var nextTokenCheckAt: Instant?
  /// No login session's grace ends before this (the earliest lastHeard + grace when it was
  /// computed; a session heard since only ends later): the grace ends on time, not on the
  /// next presence tick.
  var nextGraceEndAt: Instant?
  /// The number the next new login session gets (``LoginAccept/session``).
  var nextLoginSession: UInt32
  /// The latest `now` seen: time never runs backwards inside the server.
  var clock: Instant = .zero
  var outbox = Outbox()
  var joinLimiter: JoinLimiter
  var events: [EdgeEvent] = []
  public internal(set) var counters = EdgeCounters()

  /// At most this many admin nonces are remembered (they are forgotten after 2 minutes).
  static let maximumNonces = 4096

  public init(config: EdgeConfig) {
    self.config = config
    nextLoginSession = config.firstLoginSession
    signer = TokenSigner(appID: config.appID, certificate: config.appCertificate)
    joinLimiter = JoinLimiter(limit: config.joinLimit)
  }

  // MARK: - Queries

  public var sessionCount: Int { table.count }

  /// How many entries each of the server's tables holds: what its memory grows with.
  public var tableCounts: EdgeTableCounts {
    EdgeTableCounts(
      sessions: table.count, endedSessions: ended.count, departures: departureCount,
      bans: bans.count, adminNonces: takenNonces.count, joinSources: joinLimiter.sourceCount,
      logins: logins.count, loginChannels: logins.rosters.channels.count,
      queuedEvents: logins.queuedEvents, userBans: userBans.count)
  }

  /// When ``tick(now:wallClock:)`` next has something to do; nil while no session is held.
  public var nextDeadline: Instant? {
    [nextPresenceAt, nextTokenCheckAt, nextGraceEndAt].compactMap { $0 }.min()
  }

  /// The uids in `channel`, sorted.
  public func members(of channel: ChannelName) -> [UInt32] {
    table.members(of: channel).keys.sorted()
  }

  /// The uid and channel of the session under `cookie`, if the server holds it.
  public func session(cookie: UInt64) -> (channel: ChannelName, uid: UInt32)? {
    table[cookie].map { ($0.channel, $0.uid) }
  }

  public var loginSessionCount: Int { logins.count }

  /// The user ids in the login channel `channel`, sorted by their bytes.
  public func loginMembers(of channel: ChannelName) -> [UserID] {
    logins.rosters.members(of: channel).keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
  }

  /// The user id and channels of the login session under `cookie`, if the server holds it.
  public func loginSession(cookie: UInt64) -> (userID: UserID, channels: [ChannelName])? {
    logins[cookie].map { ($0.userID, $0.channels) }
  }

  /// The events recorded since the last call (only with ``EdgeConfig/recordsEvents``).
  public mutating func takeEvents() -> [EdgeEvent] {
    defer { events.removeAll(keepingCapacity: true) }
    return events
  }

  // MARK: - Input

  /// Handles one datagram from `address`: a client packet, or an admin request ("TA").
  /// A datagram that does not decode, or of a server → client type, is dropped and
  /// counted in ``counters``.
  public mutating func receive(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) -> [Outgoing] {
    let now = advanceClock(now)
    if AdminKick.hasMagic(datagram) {
      handleAdmin(datagram, from: address, wallClock: wallClock)
    } else if let packet = try? Packet.decode(datagram) {
      handle(packet, from: address, now: now, wallClock: wallClock)
    } else {
      counters.malformed &+= 1
    }
    return takeOutput()
  }

  /// Does what is due by `now`: presence digests, forgetting silent sessions and ending
  /// login sessions past their grace every presence interval; token expiry (of both kinds
  /// of session) every token-check interval.
  public mutating func tick(now: Instant, wallClock: UInt64) -> [Outgoing] {
    let now = advanceClock(now)
    if let due = nextPresenceAt, due <= now {
      forgetSilentSessions(now: now)
      endLapsedLogins(now: now)
      pruneNotices(now: now)
      relayPresence(now: now)
      nextPresenceAt = Self.next(after: due, every: config.presenceInterval, now: now)
    }
    if let due = nextGraceEndAt, due <= now {
      endLapsedLogins(now: now)
      nextGraceEndAt = logins.sessions.values.map { $0.lastHeard + config.loginGrace }.min()
    }
    if let due = nextTokenCheckAt, due <= now {
      expireTokens(wallClock: wallClock)
      expireLoginTokens(wallClock: wallClock)
      nextTokenCheckAt = Self.next(after: due, every: config.tokenCheckInterval, now: now)
    }
    if table.isEmpty && logins.isEmpty && ended.isEmpty {
      nextPresenceAt = nil
      nextTokenCheckAt = nil
      nextGraceEndAt = nil
    }
    return takeOutput()
  }

  private mutating func handle(
    _ packet: Packet, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    let cookie = packet.cookie
    switch packet.message {
    case .join(let request):
      join(request, cookie: cookie, from: address, now: now, wallClock: wallClock)
    case .heartbeat(let sequence):
      guard heardFromHolder(cookie, address: address, now: now) != nil else {
        if repeatNotice(cookie, to: address) { return }
        return sessionUnknown(cookie, to: address)
      }
      let ack = Message.heartbeatAck(sequence: sequence, serverTimeMs: Self.milliseconds(now))
      outbox.send(ack, cookie: cookie, to: address)
    case .renewToken(let token) where table[cookie] == nil && logins[cookie] != nil:
      renewLogin(token, cookie: cookie, from: address, now: now, wallClock: wallClock)
    case .renewToken(let token):
      guard let record = heardFromHolder(cookie, address: address, now: now) else {
        if repeatNotice(cookie, to: address) { return }
        return sessionUnknown(cookie, to: address)
      }
      renew(token, for: record, wallClock: wallClock)
    case .leave:
      guard table[cookie]?.address == address else {
        if table[cookie] != nil { counters.wrongAddress &+= 1 }
        counters.unknownSession &+= 1
        return
      }
      removeSession(cookie, cause: .quit, announce: true)
    case .accept, .refuse, .heartbeatAck, .presence, .kick, .tokenExpired, .sessionUnknown,
      .tokenRenewed, .loginAccept, .loginRefuse, .memberEvents, .channelAck:
      counters.unexpected &+= 1
    case .login(let request):
      login(request, cookie: cookie, from: address, now: now, wallClock: wallClock)
    case .loginHeartbeat(let sequence, let eventsReceived):
      loginHeartbeat(
        sequence: sequence, eventsReceived: eventsReceived, cookie: cookie, from: address,
        now: now)
    case .logout:
      logout(cookie: cookie, from: address, now: now)
    case .channelOperation(let operation):
      channelOperation(operation, cookie: cookie, from: address, now: now)
    }
  }

  /// Records that the session under `cookie` was heard at `now` from `address`, if that is
  /// where it is (SessionTable.hear); from anywhere else it is counted, and the datagram
  /// gets no more than SESSION_UNKNOWN, which is smaller than it (docs/PROTOCOL.md,
  /// "Security").
  private mutating func heardFromHolder(_ cookie: UInt64, address: PeerAddress, now: Instant)
    -> SessionRecord?
  {
    switch table.hear(cookie, from: address, at: now) {
    case .heard(let record): return record
    case .elsewhere:
      counters.wrongAddress &+= 1
      return nil
    case .unknown: return nil
    }
  }

  mutating func sessionUnknown(_ cookie: UInt64, to address: PeerAddress) {
    counters.unknownSession &+= 1
    outbox.send(.sessionUnknown, cookie: cookie, to: address)
  }

  private mutating func renew(_ token: Token, for record: SessionRecord, wallClock: UInt64) {
    let renewal: TokenRenewal
    do throws(TokenError) {
      let grant = TokenGrant.channel(record.channel, uid: record.uid)
      let expiry = try signer.verify(token.bytes, for: grant, wallClock: wallClock)
      table.setTokenExpiry(expiry, of: record.cookie)
      renewal = TokenRenewal(
        refused: nil, tokenTimeLeftMs: Self.timeLeftMs(expiry: expiry, wallClock: wallClock))
    } catch {
      renewal = TokenRenewal(refused: Self.refuseReason(error), tokenTimeLeftMs: 0)
    }
    outbox.send(.tokenRenewed(renewal), cookie: record.cookie, to: record.address)
  }

  // MARK: - Shared steps

  mutating func advanceClock(_ now: Instant) -> Instant {
    if now > clock { clock = now }
    return clock
  }

  /// Starts the timers when the first session arrives.
  mutating func armTimers() {
    if nextPresenceAt == nil { nextPresenceAt = clock + config.presenceInterval }
    if nextTokenCheckAt == nil { nextTokenCheckAt = clock + config.tokenCheckInterval }
    // A login session just made or heard: its grace cannot end before clock + grace.
    if !logins.isEmpty {
      let end = clock + config.loginGrace
      nextGraceEndAt = nextGraceEndAt.map { min($0, end) } ?? end
    }
  }

  /// Removes a session; with `announce`, its channel's other members get a LEFT entry (and
  /// the next digests repeat it). `cause` nil: the caller recorded the event itself.
  mutating func removeSession(_ cookie: UInt64, cause: EdgeEvent.LeaveCause?, announce: Bool) {
    guard let removed = table.remove(cookie) else { return }
    if let cause { record(.left(channel: removed.channel, uid: removed.uid, cause: cause)) }
    if announce {
      let entry = PresenceEntry(uid: removed.uid, kind: .left, silentForMs: 0)
      broadcast(entry, in: removed.channel, except: cookie)
      recordDeparture(of: removed.uid, from: removed.channel)
    }
  }

  /// Sends `entry` to every member of `channel` but `excluded`.
  mutating func broadcast(_ entry: PresenceEntry, in channel: ChannelName, except excluded: UInt64)
  {
    let templates = Outbox.presenceTemplates([entry])
    for (_, cookie) in table.members(of: channel) where cookie != excluded {
      guard let member = table[cookie] else { continue }
      for template in templates {
        outbox.send(template: template, cookie: cookie, to: member.address)
      }
    }
  }

  mutating func record(_ event: EdgeEvent) {
    if config.recordsEvents { events.append(event) }
  }

  /// The next instant on the grid `due + k·interval` after `now` (or `now + interval` after
  /// a late wake-up).
  static func next(after due: Instant, every interval: Interval, now: Instant) -> Instant {
    let next = due + interval
    return next > now ? next : now + interval
  }

  static func milliseconds(_ now: Instant) -> UInt64 { now.nanoseconds / 1_000_000 }

  /// Milliseconds from `wallClock` to `expiry`, clamped to `UInt32`; 0 for a token that never
  /// expires (and never otherwise: a token is taken only while its expiry is ahead).
  static func timeLeftMs(expiry: UInt64, wallClock: UInt64) -> UInt32 {
    guard expiry != 0 else { return 0 }
    let seconds = expiry > wallClock ? expiry - wallClock : 1
    let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    return overflow || ms > UInt64(UInt32.max) ? .max : UInt32(ms)
  }

  static func refuseReason(_ error: TokenError) -> RefuseReason {
    switch error {
    case .invalid: .invalidToken
    case .expired: .tokenExpired
    }
  }
}

/// A member of a channel, for bans.
struct MemberKey: Hashable {
  var channel: ChannelName
  var uid: UInt32
}
