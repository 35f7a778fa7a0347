// SPDX-License-Identifier: Apache-2.0
/// What the session tells the app: each case is one callback of `tether_engine_handler`,
/// in the order the session emits them.
public enum ChannelNotification: Equatable, Sendable {
  /// `on_connection_state_changed`. Two consecutive ones never carry the same pair.
  case connectionStateChanged(ConnectionState, ConnectionChangedReason)
  /// `on_join_channel_success`: after CONNECTED/JOIN_SUCCESS. `elapsedMs` counts from
  /// the join call; `uid` is the server's choice when the app asked for 0.
  case joinChannelSuccess(channel: ChannelName, uid: UInt32, elapsedMs: UInt32)
  /// `on_rejoin_channel_success`: after CONNECTED/REJOIN_SUCCESS.
  case rejoinChannelSuccess(channel: ChannelName, uid: UInt32, elapsedMs: UInt32)
  /// `on_connection_lost`: `lostAfter` without data (once per outage).
  case connectionLost
  /// `on_leave_channel`: the last notification of a session the app left.
  case leaveChannel
  /// `on_user_joined`: a remote member is in the channel. `elapsedMs` counts from the
  /// local join call.
  case userJoined(uid: UInt32, elapsedMs: UInt32)
  /// `on_user_offline`: a remote member left (QUIT) or went silent (DROPPED).
  case userOffline(uid: UInt32, reason: UserOfflineReason)
  /// Beyond the vendor: a remote member has been silent for `interruptedAfter`.
  case remoteMemberInterrupted(uid: UInt32)
  /// Beyond the vendor: an interrupted remote member was heard from again.
  case remoteMemberResumed(uid: UInt32)
  /// `on_token_privilege_will_expire`: `tokenWillExpireBefore` before the expiry.
  case tokenPrivilegeWillExpire(Token)
  /// `on_request_token`: the token expired or the server refused it; call renew.
  case requestToken
  /// Beyond the vendor: a JOIN went out (first join, or a retry): attempt number, when
  /// the next goes out, when the effort gives up.
  case joinAttempt(RetryStatus)
}
