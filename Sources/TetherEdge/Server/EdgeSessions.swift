// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The sessions an edge holds, to read: who holds which session id, and who is in which
/// channel. ``EdgeServer``'s queries read through it.
///
/// It exists for their cost. A query on the generic ``EdgeServer`` from another module is
/// not specialized, and its caller passes the server indirectly: a caller whose server is
/// not in memory copies the whole server first (every table, the handshakes' keys), a
/// retain for each reference it holds. The queries are inlined instead, and only this
/// view, the session table's few references, is passed to code that is not.
public struct EdgeSessions {
  @usableFromInline let table: SessionTable

  @usableFromInline init(table: SessionTable) { self.table = table }

  /// The number of channel sessions.
  public var channelCount: Int { table.count(of: .channel) }

  /// The number of login sessions.
  public var loginCount: Int { table.count(of: .login) }

  /// The uid and channel of the channel session whose id is `cookie`, if it is held.
  public func channel(cookie: UInt64) -> (channel: ChannelName, uid: UInt32)? {
    table[cookie]?.member.map { ($0.channel, $0.uid) }
  }

  /// The user id and channels of the login session whose id is `cookie`, if it is held.
  public func login(cookie: UInt64) -> (userID: UserID, channels: [ChannelName])? {
    table[cookie]?.login.map { ($0.userID, $0.channels) }
  }

  /// The uids in the channel profile's `channel`, sorted.
  public func members(of channel: ChannelName) -> [UInt32] {
    table.channels.members(of: channel).keys.sorted()
  }

  /// The user ids in the login profile's `channel`, sorted by their bytes.
  public func loginMembers(of channel: ChannelName) -> [UserID] {
    table.loginChannels.members(of: channel).keys.sorted {
      $0.bytes.lexicographicallyPrecedes($1.bytes)
    }
  }
}
