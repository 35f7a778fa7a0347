// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The two profiles a session can be of. A datagram of one profile's types under the cookie
/// of the other's session finds no session.
enum SessionKind { case channel, login }

/// One session the server holds, of either profile: what every session has (the cookie it
/// is known by, where it is, when it was last heard, its token's expiry), and its profile's
/// own part. What the server keeps per session for the transport belongs here, once for
/// both profiles.
struct SessionRecord {
  let cookie: UInt64
  var address: PeerAddress
  var lastHeard: Instant
  /// Unix seconds; 0: the token never expires.
  var tokenExpiry: UInt64
  var profile: Profile

  enum Profile {
    case channel(ChannelMember)
    case login(LoginState)
  }

  var kind: SessionKind {
    switch profile {
    case .channel: .channel
    case .login: .login
    }
  }

  var member: ChannelMember? { if case .channel(let member) = profile { member } else { nil } }
  var login: LoginState? { if case .login(let login) = profile { login } else { nil } }

  /// What a token must grant to renew or resume this session.
  var grant: TokenGrant {
    switch profile {
    case .channel(let member): .channel(member.channel, uid: member.uid)
    case .login(let login): .user(login.userID)
    }
  }

  /// The log line of its admission (or resumption).
  func joinedEvent(resumed: Bool) -> EdgeEvent {
    switch profile {
    case .channel(let member): .joined(channel: member.channel, uid: member.uid, resumed: resumed)
    case .login(let login): .loggedIn(user: login.userID, resumed: resumed)
    }
  }

  /// The log line of its end.
  func leftEvent(_ cause: EdgeEvent.LeaveCause) -> EdgeEvent {
    switch profile {
    case .channel(let member): .left(channel: member.channel, uid: member.uid, cause: cause)
    case .login(let login): .loggedOut(user: login.userID, cause: cause)
    }
  }
}

/// A channel session's own part: a member of one channel under one uid. Fixed size (the
/// name shares the table's storage).
struct ChannelMember {
  let channel: ChannelName
  let uid: UInt32
  /// When this session was admitted (a resume keeps it): the digests call it JOINED, not
  /// ALIVE, for a while (``EdgeServer/relayPresence(now:)``).
  let joinedAt: Instant
}

/// A login session's own part (docs/BEHAVIOUR.md §2): a user logged in, its channels, the
/// member events its client has not taken yet. Bounded: at most
/// ``SessionTable/maximumChannels`` channels and ``MemberEventQueue/capacity`` events.
struct LoginState {
  let userID: UserID
  /// The client showed it has this session's first LOGIN_ACCEPT: a LOGIN_HEARTBEAT or a
  /// CHANNEL_OPERATION came from it. Until then a LOGIN under the cookie is a repeat of the
  /// first (its LOGIN_ACCEPT was lost) and is answered without RESUMED, as the first was.
  var confirmed = false
  /// The highest CHANNEL_OPERATION sequence applied (0: none yet).
  var appliedOperations: UInt32 = 0
  /// The channels it is in, in the order it joined them.
  var channels: [ChannelName] = []
  var events = MemberEventQueue()

  init(userID: UserID, session: UInt32) {
    self.userID = userID
    events.session = session
  }

  /// This server session's number (``LoginAccept/session``), carried by its LOGIN_ACCEPTs,
  /// MEMBER_EVENTS and CHANNEL_ACKs.
  var session: UInt32 { events.session }
}

/// Every session by cookie, and what each profile looks its sessions up by: channel sessions
/// by channel and uid; login sessions by user id, and by the login channels they are in.
/// The maps always agree: a channel session is its channel's member under its uid; a user id
/// has at most one login session, in the roster of exactly the channels it lists. The
/// server serves one app id, so a user id alone stands for (app id, user id).
@usableFromInline struct SessionTable {
  private(set) var records: [UInt64: SessionRecord] = [:]
  /// The channel profile's channels: channel → uid → cookie.
  private(set) var channels = Rosters<UInt32>()
  /// User id → the cookie of its login session.
  private(set) var users: [UserID: UInt64] = [:]
  /// The login profile's channels (unrelated to the channel profile's of the same name).
  private(set) var loginChannels = Rosters<UserID>()

  /// Where ``freeUID(in:unless:)`` starts looking.
  static let firstAssignedUID: UInt32 = 1_000_000
  /// At most this many channels per login session; a JOIN operation past it is acknowledged
  /// and not applied (``EdgeCounters/channelOperationsOverLimit``).
  static let maximumChannels = 16

  var count: Int { records.count }
  var isEmpty: Bool { records.isEmpty }
  func count(of kind: SessionKind) -> Int { kind == .login ? users.count : count - users.count }

  subscript(cookie: UInt64) -> SessionRecord? { records[cookie] }

  /// The first uid from 1,000,000 up that nobody holds in `channel` and that is not
  /// `banned` (wrapping past 2³²−1 to 1). There is always one: the server never holds
  /// 2³²−1 members and bans.
  func freeUID(in channel: ChannelName, unless banned: (UInt32) -> Bool) -> UInt32 {
    let members = channels.members(of: channel)
    var uid = Self.firstAssignedUID
    while members[uid] != nil || banned(uid) {
      uid = uid == .max ? 1 : uid + 1
    }
    return uid
  }

  /// Adds `record`, a login session in no channel yet; the caller has removed any session
  /// under its cookie, and any other holder of its (channel, uid) or user id. A channel
  /// session keeps the table's copy of its channel's name.
  mutating func insert(_ record: SessionRecord) {
    var record = record
    switch record.profile {
    case .channel(let member):
      let name = channels.storedName(of: member.channel) ?? member.channel
      record.profile = .channel(
        ChannelMember(channel: name, uid: member.uid, joinedAt: member.joinedAt))
      channels.add(member.uid, cookie: record.cookie, to: name)
    case .login(let login):
      users[login.userID] = record.cookie
    }
    records[record.cookie] = record
  }

  /// Removes and returns the session under `cookie`, out of every roster.
  @discardableResult
  mutating func remove(_ cookie: UInt64) -> SessionRecord? {
    guard let record = records.removeValue(forKey: cookie) else { return nil }
    switch record.profile {
    case .channel(let member):
      channels.remove(member.uid, from: member.channel)
    case .login(let login):
      if users[login.userID] == cookie { users[login.userID] = nil }
      for channel in login.channels { loginChannels.remove(login.userID, from: channel) }
    }
    return record
  }

  /// Records that the session under `cookie` was heard at `now`; returns it.
  mutating func markHeard(_ cookie: UInt64, at now: Instant) -> SessionRecord? {
    guard let index = records.index(forKey: cookie) else { return nil }
    records.values[index].lastHeard = now
    return records.values[index]
  }

  /// The session under `cookie` is at `address` now, heard at `now`, with the token of
  /// `tokenExpiry`: its JOIN or LOGIN, which bears the token, passed.
  mutating func resume(_ cookie: UInt64, at address: PeerAddress, now: Instant, tokenExpiry: UInt64)
  {
    guard let index = records.index(forKey: cookie) else { return }
    records.values[index].address = address
    records.values[index].lastHeard = now
    records.values[index].tokenExpiry = tokenExpiry
  }

  /// The session under `cookie` is at `address` now (a version 2 session whose device
  /// answered its path challenge there, docs/PROTOCOL.md §12.11); nothing else changes.
  mutating func move(_ cookie: UInt64, to address: PeerAddress) {
    records[cookie]?.address = address
  }

  /// The session under `old` goes on under `new` (a version 2 resume gives a held session
  /// the new session id of its new handshake), in every roster, with nothing else changed.
  /// False, changing nothing, if `old` holds none or `new` is taken.
  mutating func rekey(_ old: UInt64, to new: UInt64) -> Bool {
    guard records[new] == nil, let record = records.removeValue(forKey: old) else { return false }
    switch record.profile {
    case .channel(let member):
      channels.add(member.uid, cookie: new, to: member.channel)
    case .login(let login):
      users[login.userID] = new
      for channel in login.channels { loginChannels.add(login.userID, cookie: new, to: channel) }
    }
    records[new] = SessionRecord(
      cookie: new, address: record.address, lastHeard: record.lastHeard,
      tokenExpiry: record.tokenExpiry, profile: record.profile)
    return true
  }

  mutating func setTokenExpiry(_ expiry: UInt64, of cookie: UInt64) {
    records[cookie]?.tokenExpiry = expiry
  }

  // MARK: - Login sessions' own part

  /// Changes the login session under `cookie` with `body`; nil if there is none. (Not its
  /// channels: ``join(_:cookie:)`` and ``leave(_:cookie:)`` keep the rosters in step.)
  @discardableResult
  mutating func updateLogin<R>(_ cookie: UInt64, _ body: (inout LoginState) -> R) -> R? {
    guard let index = records.index(forKey: cookie),
      case .login(var login) = records.values[index].profile
    else { return nil }
    // The record lets go of the state's arrays while `body` changes them: no copy.
    records.values[index].profile = .login(LoginState(userID: login.userID, session: 0))
    defer { records.values[index].profile = .login(login) }
    return body(&login)
  }

  enum JoinOutcome: Equatable {
    case joined
    case alreadyMember
    /// The session is in ``maximumChannels`` channels already.
    case full
  }

  /// Puts the login session under `cookie` into `channel`.
  mutating func join(_ channel: ChannelName, cookie: UInt64) -> JoinOutcome? {
    let name = loginChannels.storedName(of: channel) ?? channel
    let outcome = updateLogin(cookie) { login -> (JoinOutcome, UserID) in
      guard !login.channels.contains(channel) else { return (.alreadyMember, login.userID) }
      guard login.channels.count < Self.maximumChannels else { return (.full, login.userID) }
      login.channels.append(name)
      return (.joined, login.userID)
    }
    if case (.joined, let user)? = outcome { loginChannels.add(user, cookie: cookie, to: name) }
    return outcome?.0
  }

  /// Takes the login session under `cookie` out of `channel`; false if it was not in it.
  mutating func leave(_ channel: ChannelName, cookie: UInt64) -> Bool {
    let user = updateLogin(cookie) { login -> UserID? in
      guard let position = login.channels.firstIndex(of: channel) else { return nil }
      login.channels.remove(at: position)
      return login.userID
    }
    guard let user = user ?? nil else { return false }
    loginChannels.remove(user, from: channel)
    return true
  }

  /// Member events waiting in all login sessions' queues.
  var queuedEvents: Int { records.values.reduce(0) { $0 + ($1.login?.events.pending.count ?? 0) } }
}
