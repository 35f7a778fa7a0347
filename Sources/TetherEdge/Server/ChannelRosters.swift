import TetherCore

/// The members of the login profile's channels: channel → user id → the cookie of that
/// user's login session. These channels are not the channel profile's: a login channel
/// named "x" and a channel session's "x" are unrelated. An empty channel is dropped.
struct ChannelRosters {
  private(set) var channels: [ChannelName: [UserID: UInt64]] = [:]

  /// The members of `channel` (user id → cookie); empty if nobody is there.
  func members(of channel: ChannelName) -> [UserID: UInt64] { channels[channel] ?? [:] }

  /// The table's own copy of `channel`'s name, if someone is in it (so every session in a
  /// channel shares one name's storage).
  func storedName(of channel: ChannelName) -> ChannelName? {
    channels.index(forKey: channel).map { channels.keys[$0] }
  }

  mutating func add(_ user: UserID, cookie: UInt64, to channel: ChannelName) {
    channels[channel, default: [:]][user] = cookie
  }

  mutating func remove(_ user: UserID, from channel: ChannelName) {
    channels[channel]?[user] = nil
    if channels[channel]?.isEmpty ?? false { channels[channel] = nil }
  }
}
