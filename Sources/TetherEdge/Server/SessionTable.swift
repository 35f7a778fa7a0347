import TetherCore

/// One joined session: a fixed-size record (the channel name shares the channel table's
/// storage).
struct SessionRecord {
  let cookie: UInt64
  let channel: ChannelName
  let uid: UInt32
  var address: PeerAddress
  var lastHeard: Instant
  /// Unix seconds; 0: the token never expires.
  var tokenExpiry: UInt64
  /// When this session was admitted (a resume keeps it): the digests call it JOINED, not
  /// ALIVE, for a while (``EdgeServer/relayPresence(now:)``).
  let joinedAt: Instant
}

/// Sessions by cookie, and each channel's members by uid. The two maps always agree: every
/// session is the member of its channel under its uid, and an empty channel is dropped.
struct SessionTable {
  private(set) var sessions: [UInt64: SessionRecord] = [:]
  /// Channel → uid → cookie.
  private(set) var channels: [ChannelName: [UInt32: UInt64]] = [:]

  /// Where ``freeUID(in:)`` starts looking.
  static let firstAssignedUID: UInt32 = 1_000_000

  var count: Int { sessions.count }
  var isEmpty: Bool { sessions.isEmpty }

  subscript(cookie: UInt64) -> SessionRecord? { sessions[cookie] }

  /// The cookie of the session holding `uid` in `channel`.
  func holder(of uid: UInt32, in channel: ChannelName) -> UInt64? { channels[channel]?[uid] }

  /// The members of `channel` (uid → cookie); empty if nobody is there.
  func members(of channel: ChannelName) -> [UInt32: UInt64] { channels[channel] ?? [:] }

  /// The first uid from 1,000,000 up that nobody holds in `channel` (wrapping past
  /// 2³²−1 to 1). There is always one: the table never holds 2³²−1 members.
  func freeUID(in channel: ChannelName) -> UInt32 {
    let members = channels[channel] ?? [:]
    var uid = Self.firstAssignedUID
    while members[uid] != nil {
      uid = uid == .max ? 1 : uid + 1
    }
    return uid
  }

  /// Adds `record`; the caller has removed any session under its cookie or its
  /// (channel, uid). The record keeps the table's copy of the channel name.
  mutating func insert(_ record: SessionRecord) {
    var record = record
    if let index = channels.index(forKey: record.channel) {
      record = SessionRecord(
        cookie: record.cookie, channel: channels.keys[index], uid: record.uid,
        address: record.address, lastHeard: record.lastHeard, tokenExpiry: record.tokenExpiry,
        joinedAt: record.joinedAt)
    }
    sessions[record.cookie] = record
    channels[record.channel, default: [:]][record.uid] = record.cookie
  }

  /// Removes and returns the session under `cookie`.
  @discardableResult
  mutating func remove(_ cookie: UInt64) -> SessionRecord? {
    guard let record = sessions.removeValue(forKey: cookie) else { return nil }
    channels[record.channel]?[record.uid] = nil
    if channels[record.channel]?.isEmpty ?? false { channels[record.channel] = nil }
    return record
  }

  /// What a datagram under a cookie found.
  enum Hearing {
    case unknown
    /// The cookie is held, but the session is at another address: nothing was recorded.
    case elsewhere
    case heard(SessionRecord)
  }

  /// Records that `cookie` was heard at `now`, if `address` is where the session is (one
  /// lookup). A datagram under a held cookie from anywhere else proves nothing: a cookie
  /// can be seen on the path. Only a JOIN, which carries the token, moves a session
  /// (``move(_:to:at:)``).
  mutating func hear(_ cookie: UInt64, from address: PeerAddress, at now: Instant) -> Hearing {
    guard let index = sessions.index(forKey: cookie) else { return .unknown }
    guard sessions.values[index].address == address else { return .elsewhere }
    sessions.values[index].lastHeard = now
    return .heard(sessions.values[index])
  }

  /// The session under `cookie` is at `address` now (its rejoin passed the token check),
  /// heard at `now`.
  mutating func move(_ cookie: UInt64, to address: PeerAddress, at now: Instant) {
    guard let index = sessions.index(forKey: cookie) else { return }
    sessions.values[index].address = address
    sessions.values[index].lastHeard = now
  }

  mutating func setTokenExpiry(_ expiry: UInt64, of cookie: UInt64) {
    sessions[cookie]?.tokenExpiry = expiry
  }
}
