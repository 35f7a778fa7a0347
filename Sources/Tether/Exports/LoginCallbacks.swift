// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The app's login handler (`tether_rtm_handler`), copied at create (up to the size the app
/// declared; the rest NULL), and its context pointer: each notification of the login
/// session becomes one C callback, if the app set it.
struct LoginCallbacks: NotificationSink, AppCallbacks {
  let handler: tether_rtm_handler
  let context: UnsafeMutableRawPointer?

  /// The first published handler: `size` and the six callbacks of the contract up to
  /// `on_member_left`.
  static let firstPublishedCallbacks = 6
  var logger: Logger { Logger(callback: handler.on_log, context: context) }

  func deliver(_ kept: OutputNotification, from connection: Connection) {
    switch kept {
    case .login(.connectionStateChanged(let state, let reason)):
      handler.on_connection_state_changed?(
        context, tether_rtm_connection_state(UInt32(bitPattern: state.rawValue)),
        tether_rtm_connection_change_reason(UInt32(bitPattern: reason.rawValue)))
    case .login(.loginResult(let error)):
      handler.on_login_result?(context, error.rawValue)
    case .login(.logoutResult(let error)):
      handler.on_logout_result?(context, error.rawValue)
    case .login(.tokenExpired):
      handler.on_token_expired?(context)
    case .login(.memberJoined(let channel, let user)):
      member(channel, user, handler.on_member_joined)
    case .login(.memberLeft(let channel, let user)):
      member(channel, user, handler.on_member_left)
    case .login(.loginAttempt(let attempt, let nextAttemptAt)):
      connection.attempted(attempt)
      guard !connection.isDestroyed else { return }
      let inMs = nextAttemptAt.since(connection.now).clampedMilliseconds
      handler.on_login_attempt?(context, attempt, inMs)
    case .channel: return  // the other profile's: never in this one's output
    }
  }

  /// A member event: `callback` with the channel's and the member's names as C strings.
  private func member(
    _ channel: ArraySlice<UInt8>, _ user: ArraySlice<UInt8>,
    _ callback: (
      @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) ->
        Void
    )?
  ) {
    guard let callback else { return }
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: cStringsRoom) { buffer in
      guard let user = writeCStrings(channel, user, into: buffer) else { return }
      callback(context, buffer.baseAddress, user)
    }
  }
}
