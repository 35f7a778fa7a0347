// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The members of channels: channel → member → the cookie of the member's session. A
/// member is a uid in the channel profile's channels, a user id in the login profile's (a
/// login channel named "x" and a channel session's "x" are unrelated). An empty channel is
/// dropped.
struct Rosters<Member: Hashable> {
  private(set) var channels: [ChannelName: [Member: UInt64]] = [:]

  /// The members of `channel`; empty if nobody is there.
  func members(of channel: ChannelName) -> [Member: UInt64] { channels[channel] ?? [:] }

  /// The table's own copy of `channel`'s name, if someone is in it (so every session in a
  /// channel shares one name's storage).
  func storedName(of channel: ChannelName) -> ChannelName? {
    channels.index(forKey: channel).map { channels.keys[$0] }
  }

  mutating func add(_ member: Member, cookie: UInt64, to channel: ChannelName) {
    channels[channel, default: [:]][member] = cookie
  }

  mutating func remove(_ member: Member, from channel: ChannelName) {
    channels[channel]?[member] = nil
    if channels[channel]?.isEmpty ?? false { channels[channel] = nil }
  }
}
