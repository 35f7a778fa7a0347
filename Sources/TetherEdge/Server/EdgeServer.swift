// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSodium

/// The edge server's logic as a value: no socket, no clock (sans-IO, like the client's
/// `ChannelSession`). The loop feeds it datagrams and the time, sends what it returns, and
/// calls ``tick(now:wallClock:)`` when ``nextDeadline`` passes.
///
/// Two clocks come in with every call: `now`, monotonic (presence ages, silence, the
/// server's timers), and `wallClock`, unix seconds (token expiries, bans, admin requests).
///
/// Sessions of both profiles are in one table, keyed by their session id (the code still
/// calls it the cookie, the name version 1 gave the key: SessionTable.swift); what every session goes through (admission, being heard, token
/// renewal and expiry, silence, its end) is written once (EdgeServer+Admission.swift,
/// EdgeServer+Sessions.swift), and each profile adds its own: the channel profile's
/// presence (EdgeServer+Presence.swift), the login profile's channels and member events
/// (EdgeServer+Login.swift). Nothing a datagram holds can make it trap, and what it keeps
/// per peer is bounded: a fixed-size record per channel session, and per login session a
/// record with at most 16 channels and 256 queued member events; at most
/// ``EdgeConfig/maxSessions`` sessions of both profiles together.
///
/// It speaks protocol version 2 (docs/PROTOCOL.md §12) alone (EdgeServer+Secure.swift): a
/// version 1 datagram gets nothing back, and a line in the log at most every 10 s says why
/// (``VersionOneDrops``). Version 1's messages stay the server's own vocabulary: a DATA
/// payload stands for one, and the output is written from them. `Crypto` is the seam
/// version 2 seals, opens and draws random bytes through:
/// libsodium for `tether-edge` (``init(config:)``), the world's seeded stream in the
/// simulation, which gives it to the edge it builds at a restart too.
public struct EdgeServer<Crypto: SessionCrypto> {
  public let config: EdgeConfig
  /// Version 2's handshakes and the keys of its sessions.
  var front: SecureFront<Crypto>
  @usableFromInline var table = SessionTable()
  /// (channel, uid) → banned until (unix seconds).
  var bans: [MemberKey: UInt64] = [:]
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
  var versionOneDrops = VersionOneDrops()
  var events: [EdgeEvent] = []
  public internal(set) var counters = EdgeCounters()
  /// The fleet this edge is one of (nil: alone): EdgeServer+Fleet.swift.
  var fleet: FleetState?
  var nextBeaconAt: Instant?

  /// At most this many admin nonces are remembered (they are forgotten after 2 minutes).
  static var maximumNonces: Int { 4096 }

  /// An edge with `config`, whose version 2 draws its random bytes (at start: the cookie
  /// secret, the epoch, the ticket key) and does its cryptography through `crypto`.
  public init(config: EdgeConfig, crypto: Crypto) {
    self.config = config
    nextLoginSession = config.firstLoginSession
    joinLimiter = JoinLimiter(limit: config.joinLimit)
    front = SecureFront(config: config, crypto: crypto)
    if let incarnation = config.fleetIncarnation {
      fleet = FleetState(
        me: FleetOwner(edgeID: config.edgeID.bytes, incarnation: incarnation),
        forgetAfter: config.forgetAfter,
        leftKept: Interval(
          nanoseconds: config.presenceInterval.nanoseconds &* Self.departureRepeats))
    }
  }

  // MARK: - Queries

  /// The sessions held, to read (``EdgeSessions``: why the queries below go through it).
  @inlinable public var sessions: EdgeSessions { EdgeSessions(table: table) }

  /// The number of channel sessions.
  @inlinable public var sessionCount: Int { sessions.channelCount }

  /// How many entries each of the server's tables holds: what its memory grows with.
  public var tableCounts: EdgeTableCounts {
    EdgeTableCounts(
      sessions: sessionCount, endedSessions: ended.count, departures: departureCount,
      bans: bans.count, adminNonces: takenNonces.count, joinSources: joinLimiter.sourceCount,
      logins: loginSessionCount, loginChannels: table.loginChannels.channels.count,
      queuedEvents: table.queuedEvents, userBans: userBans.count)
  }

  /// When ``tick(now:wallClock:)`` next has something to do; nil while no session is held.
  public var nextDeadline: Instant? {
    [nextPresenceAt, nextTokenCheckAt, nextGraceEndAt, nextBeaconAt].compactMap { $0 }.min()
  }

  /// The uids in `channel`, sorted.
  @inlinable public func members(of channel: ChannelName) -> [UInt32] {
    sessions.members(of: channel)
  }

  /// The uid and channel of the session whose id is `cookie`, if the server holds it.
  @inlinable public func session(cookie: UInt64) -> (channel: ChannelName, uid: UInt32)? {
    sessions.channel(cookie: cookie)
  }

  /// The number of login sessions.
  @inlinable public var loginSessionCount: Int { sessions.loginCount }

  /// The user ids in the login channel `channel`, sorted by their bytes.
  @inlinable public func loginMembers(of channel: ChannelName) -> [UserID] {
    sessions.loginMembers(of: channel)
  }

  /// The user id and channels of the login session whose id is `cookie`, if the server
  /// holds it.
  @inlinable public func loginSession(cookie: UInt64) -> (userID: UserID, channels: [ChannelName])?
  {
    sessions.login(cookie: cookie)
  }

  /// The events recorded since the last call (only with ``EdgeConfig/recordsEvents``).
  public mutating func takeEvents() -> [EdgeEvent] {
    defer { events.removeAll(keepingCapacity: true) }
    return events
  }

  // MARK: - Input

  /// Handles one datagram from `address`: a client datagram of version 2, or an admin
  /// request ("TA"). A datagram that does not decode, or of a server → client type, is
  /// dropped and counted in ``counters``; so is a version 1 datagram, which is also logged
  /// (at most once per 10 s: ``VersionOneDrops``) and gets nothing back.
  public mutating func receive(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) -> [Outgoing] {
    let now = advanceClock(now)
    if AdminKick.hasMagic(datagram) {
      handleAdmin(datagram, from: address, wallClock: wallClock)
    } else if let kind = datagram.first, SecureFront<Crypto>.isSecureKind(kind) {
      receiveSecure(datagram, from: address, now: now, wallClock: wallClock)
    } else if VersionOneDrops.isVersionOne(datagram) {
      counters.versionOneDropped &+= 1
      if let dropped = versionOneDrops.drop(at: now) { record(.versionOneDropped(count: dropped)) }
    } else {
      counters.malformed &+= 1
    }
    return takeOutput()
  }

  /// Does what is due by `now`: presence digests, and ending the sessions silent past
  /// their limit, every presence interval (login sessions also at the end of their grace);
  /// token expiry every token-check interval.
  public mutating func tick(now: Instant, wallClock: UInt64) -> [Outgoing] {
    let now = advanceClock(now)
    if let due = nextPresenceAt, due <= now {
      endSilentSessions(now: now)
      pruneNotices(now: now)
      relayPresence(now: now)
      nextPresenceAt = Self.next(after: due, every: config.presenceInterval, now: now)
    }
    if let due = nextGraceEndAt, due <= now {
      endSilentSessions(now: now, only: .login)
      nextGraceEndAt = table.records.values.filter { $0.kind == .login }
        .map { $0.lastHeard + config.loginGrace }.min()
    }
    if let due = nextTokenCheckAt, due <= now {
      expireTokens(wallClock: wallClock)
      nextTokenCheckAt = Self.next(after: due, every: config.tokenCheckInterval, now: now)
    }
    fleetTick(now: now)
    if table.isEmpty && ended.isEmpty {
      nextPresenceAt = nil
      nextTokenCheckAt = nil
      nextGraceEndAt = nil
    }
    return takeOutput()
  }

  /// What a DATA datagram opened to (the version 1 message its payload stands for), under
  /// its session id. A JOIN, LOGIN or RENEW_TOKEN message never comes here (a handshake
  /// makes a session; a renewal's payload is its own): it is counted as unexpected.
  mutating func handle(
    _ packet: Packet, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    let cookie = packet.cookie
    switch packet.message {
    case .heartbeat(let sequence):
      guard hear(cookie, .channel, from: address, now: now) != nil else {
        return answerUnheard(cookie, to: address)
      }
      let ack = Message.heartbeatAck(sequence: sequence, serverTimeMs: Self.milliseconds(now))
      outbox.send(ack, cookie: cookie, to: address)
    case .loginHeartbeat(let sequence, let session, let eventsReceived):
      loginHeartbeat(
        sequence: sequence, session: session, eventsReceived: eventsReceived, cookie: cookie,
        from: address, now: now)
    case .channelOperation(let operation):
      channelOperation(operation, cookie: cookie, from: address, now: now)
    case .leave:
      quit(cookie, .channel, from: address, now: now)
    case .logout:
      quit(cookie, .login, from: address, now: now)
    case .join, .login, .renewToken, .accept, .refuse, .heartbeatAck, .presence, .kick,
      .tokenExpired, .sessionUnknown, .tokenRenewed, .loginAccept, .loginRefuse, .memberEvents,
      .channelAck:
      counters.unexpected &+= 1
    }
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
    if table.count(of: .login) > 0 {
      let end = clock + config.loginGrace
      nextGraceEndAt = nextGraceEndAt.map { min($0, end) } ?? end
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

extension EdgeServer where Crypto == SodiumCrypto {
  /// An edge on libsodium (`tether-edge`).
  public init(config: EdgeConfig) { self.init(config: config, crypto: SodiumCrypto()) }
}

/// The edge `tether-edge` runs, on libsodium. A module that holds one names it by this
/// alias and needs no import of TetherSodium (nor, through it, of libsodium's C module).
public typealias SodiumEdgeServer = EdgeServer<SodiumCrypto>

/// A member of a channel, for bans.
struct MemberKey: Hashable {
  var channel: ChannelName
  var uid: UInt32
}
