// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What a token lets its holder do.
public enum TokenGrant: Equatable, Sendable {
  /// Join `channel` as `uid`. A token for uid 0 is a wildcard: it lets its holder join
  /// the channel under any uid, and it is the only kind that can ask the server to assign
  /// one (a JOIN with uid 0).
  case channel(ChannelName, uid: UInt32)
  /// Log in as this user id (the login session of docs/BEHAVIOUR.md §2).
  case user(UserID)
}

/// Why a token was not accepted.
public enum TokenError: Error, Equatable, Sendable {
  /// Not a token the edge opens (docs/PROTOCOL.md §12.4), or it does not grant what is
  /// asked.
  case invalid
  /// It grants what is asked, but its expiry time has passed (on the edge's clock).
  case expired
}
