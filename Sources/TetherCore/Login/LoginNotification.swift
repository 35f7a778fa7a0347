// SPDX-License-Identifier: Apache-2.0
/// What a login session tells the app: each case is one callback of `tether_rtm_handler`
/// (or a log line), in the order the session emits them.
public enum LoginNotification: Equatable, Sendable {
  /// `on_connection_state_changed`. Two consecutive ones never carry the same pair.
  case connectionStateChanged(LoginState, LoginChangeReason)
  /// `on_login_result`: once per `login` call that started an attempt, before the state
  /// change it causes.
  case loginResult(LoginError)
  /// `on_logout_result`: after DISCONNECTED/LOGOUT.
  case logoutResult(LogoutError)
  /// `on_token_expired`: the session needs a new token (it expired while reconnecting, a
  /// relogin was refused for it, or the server ended a live session for it). Once per
  /// token.
  case tokenExpired
  /// `on_member_joined`: another user joined one of this session's channels. The names
  /// are the received datagram's bytes (valid until the next call into the session).
  case memberJoined(channel: ArraySlice<UInt8>, userID: ArraySlice<UInt8>)
  /// `on_member_left`: another user left one of this session's channels, logged out, or
  /// stayed away past the server's online grace.
  case memberLeft(channel: ArraySlice<UInt8>, userID: ArraySlice<UInt8>)
  /// Beyond the vendor (a log line): a LOGIN went out: attempt number and when the next
  /// goes out.
  case loginAttempt(attempt: UInt32, nextAttemptAt: Instant)

}

/// The login session's output.
public typealias LoginOutput = SessionOutput<LoginNotification>
