import TetherCore

/// One login session (docs/BEHAVIOUR.md §2): a user logged in under a cookie, its channels, the
/// member events its client has not taken yet. Bounded: at most
/// ``LoginTable/maximumChannels`` channels and ``MemberEventQueue/capacity`` events.
struct LoginRecord {
  let cookie: UInt64
  let userID: UserID
  /// This server session's number (``LoginAccept/session``), carried by its LOGIN_ACCEPTs,
  /// MEMBER_EVENTS and CHANNEL_ACKs.
  let session: UInt32
  var address: PeerAddress
  var lastHeard: Instant
  /// Unix seconds; 0: the token never expires.
  var tokenExpiry: UInt64
  /// The client showed it has this session's first LOGIN_ACCEPT: a LOGIN_HEARTBEAT or a
  /// CHANNEL_OPERATION came from it. Until then a LOGIN under the cookie is a repeat of the
  /// first (its LOGIN_ACCEPT was lost) and is answered without RESUMED, as the first was.
  var confirmed = false
  /// The highest CHANNEL_OPERATION sequence applied (0: none yet).
  var appliedOperations: UInt32 = 0
  /// The channels it is in, in the order it joined them.
  var channels: [ChannelName] = []
  var events = MemberEventQueue()

  init(
    cookie: UInt64, userID: UserID, session: UInt32, address: PeerAddress, now: Instant,
    tokenExpiry: UInt64
  ) {
    self.cookie = cookie
    self.userID = userID
    self.session = session
    events.session = session
    self.address = address
    lastHeard = now
    self.tokenExpiry = tokenExpiry
  }
}

/// Login sessions by cookie and by user id, and the rosters of their channels. The maps
/// always agree: each user id has at most one session, and a session is in the roster of
/// exactly the channels it lists. The server serves one app id, so a user id alone stands
/// for (app id, user id).
struct LoginTable {
  private(set) var sessions: [UInt64: LoginRecord] = [:]
  /// User id → cookie.
  private(set) var users: [UserID: UInt64] = [:]
  private(set) var rosters = ChannelRosters()

  /// At most this many channels per login session; a JOIN operation past it is acknowledged
  /// and not applied (``EdgeCounters/channelOperationsOverLimit``).
  static let maximumChannels = 16

  var count: Int { sessions.count }
  var isEmpty: Bool { sessions.isEmpty }

  subscript(cookie: UInt64) -> LoginRecord? { sessions[cookie] }

  /// The cookie of `user`'s session, if it has one.
  func cookie(of user: UserID) -> UInt64? { users[user] }

  /// Adds `record`, in no channel yet; the caller has removed any session under its cookie
  /// or of its user.
  mutating func insert(_ record: LoginRecord) {
    sessions[record.cookie] = record
    users[record.userID] = record.cookie
  }

  /// Removes and returns the session under `cookie`, out of every channel's roster.
  @discardableResult
  mutating func remove(_ cookie: UInt64) -> LoginRecord? {
    guard let record = sessions.removeValue(forKey: cookie) else { return nil }
    if users[record.userID] == cookie { users[record.userID] = nil }
    for channel in record.channels { rosters.remove(record.userID, from: channel) }
    return record
  }

  /// What a login datagram under a cookie found.
  enum Hearing {
    case unknown
    /// The cookie is held, but the session is at another address: nothing was recorded.
    case elsewhere
    /// Held at this address, but silent for the whole online grace: the caller removes it.
    case lapsed
    case heard(LoginRecord)
  }

  /// Records that `cookie` was heard at `now` if `address` is where its session is and the
  /// session was heard within `grace` (as ``SessionTable/hear(_:from:at:)``; only a LOGIN,
  /// which carries the token, moves a session).
  mutating func hear(_ cookie: UInt64, from address: PeerAddress, at now: Instant, grace: Interval)
    -> Hearing
  {
    guard let index = sessions.index(forKey: cookie) else { return .unknown }
    guard sessions.values[index].address == address else { return .elsewhere }
    guard now.since(sessions.values[index].lastHeard) < grace else { return .lapsed }
    sessions.values[index].lastHeard = now
    return .heard(sessions.values[index])
  }

  /// The session under `cookie` is at `address` now (its LOGIN passed the token check),
  /// heard at `now`.
  mutating func move(_ cookie: UInt64, to address: PeerAddress, at now: Instant) {
    guard let index = sessions.index(forKey: cookie) else { return }
    sessions.values[index].address = address
    sessions.values[index].lastHeard = now
  }

  /// Changes the session under `cookie` with `body`; nil if there is none. (Not for its
  /// channels: ``join(_:cookie:)`` and ``leave(_:cookie:)`` keep the rosters in step.)
  @discardableResult
  mutating func update<R>(_ cookie: UInt64, _ body: (inout LoginRecord) -> R) -> R? {
    guard let index = sessions.index(forKey: cookie) else { return nil }
    return body(&sessions.values[index])
  }

  enum JoinOutcome: Equatable {
    case joined
    case alreadyMember
    /// The session is in ``maximumChannels`` channels already.
    case full
  }

  /// Puts the session under `cookie` into `channel`.
  mutating func join(_ channel: ChannelName, cookie: UInt64) -> JoinOutcome? {
    guard let index = sessions.index(forKey: cookie) else { return nil }
    let record = sessions.values[index]
    guard !record.channels.contains(channel) else { return .alreadyMember }
    guard record.channels.count < Self.maximumChannels else { return .full }
    let name = rosters.storedName(of: channel) ?? channel
    sessions.values[index].channels.append(name)
    rosters.add(record.userID, cookie: cookie, to: name)
    return .joined
  }

  /// Takes the session under `cookie` out of `channel`; false if it was not in it.
  mutating func leave(_ channel: ChannelName, cookie: UInt64) -> Bool {
    guard let index = sessions.index(forKey: cookie),
      let position = sessions.values[index].channels.firstIndex(of: channel)
    else { return false }
    sessions.values[index].channels.remove(at: position)
    rosters.remove(sessions.values[index].userID, from: channel)
    return true
  }

  /// Queues `entry` for the session under `cookie`; its number, or nil when the session's
  /// queue is full (or there is no such session).
  mutating func enqueue(_ entry: MemberEvent.Entry, for cookie: UInt64) -> UInt32? {
    guard let index = sessions.index(forKey: cookie) else { return nil }
    return sessions.values[index].events.append(entry)
  }

  mutating func setTokenExpiry(_ expiry: UInt64, of cookie: UInt64) {
    sessions[cookie]?.tokenExpiry = expiry
  }

  /// Member events waiting in all sessions' queues.
  var queuedEvents: Int { sessions.values.reduce(0) { $0 + $1.events.pending.count } }
}
