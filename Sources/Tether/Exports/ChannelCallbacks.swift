// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The app's channel handler (`tether_engine_handler`), copied at create (up to the size the
/// app declared; the rest NULL), and its context pointer: each notification of the channel
/// session becomes one C callback, if the app set it.
struct ChannelCallbacks: NotificationSink, AppCallbacks {
  let handler: tether_engine_handler
  let context: UnsafeMutableRawPointer?

  /// The first published handler: `size` and the nine callbacks of the contract up to
  /// `on_request_token`.
  static let firstPublishedCallbacks = 9
  var logger: Logger { Logger(callback: handler.on_log, context: context) }

  func deliver(_ kept: OutputNotification, from connection: Connection) {
    switch kept {
    case .channel(.connectionStateChanged(let state, let reason)):
      handler.on_connection_state_changed?(
        context, tether_connection_state(UInt32(bitPattern: state.rawValue)),
        tether_connection_changed_reason(UInt32(bitPattern: reason.rawValue)))
    case .channel(.connectionLost):
      handler.on_connection_lost?(context)
    case .channel(.leaveChannel):
      handler.on_leave_channel?(context)
    case .channel(.userJoined(let uid, let elapsed)):
      handler.on_user_joined?(context, uid, elapsed)
    case .channel(.userOffline(let uid, let reason)):
      handler.on_user_offline?(
        context, uid, tether_user_offline_reason(UInt32(bitPattern: reason.rawValue)))
    case .channel(.remoteMemberInterrupted(let uid)):
      handler.on_remote_member_interrupted?(context, uid)
    case .channel(.remoteMemberResumed(let uid)):
      handler.on_remote_member_resumed?(context, uid)
    case .channel(.tokenPrivilegeWillExpire(let token)):
      guard let callback = handler.on_token_privilege_will_expire else { return }
      withUnsafeTemporaryAllocation(of: CChar.self, capacity: cStringsRoom) { buffer in
        guard writeCStrings(token.bytes[...], [], into: buffer) != nil else { return }
        callback(context, buffer.baseAddress)
      }
    case .channel(.requestToken):
      handler.on_request_token?(context)
    case .channel(.joinChannelSuccess(let channel, let uid, let elapsed)):
      joinSuccess(channel, uid, elapsed, callback: handler.on_join_channel_success)
    case .channel(.rejoinChannelSuccess(let channel, let uid, let elapsed)):
      joinSuccess(channel, uid, elapsed, callback: handler.on_rejoin_channel_success)
    case .channel(.joinAttempt(let status)):
      connection.attempted(status.attempt)
      guard !connection.isDestroyed else { return }
      let now = connection.now
      handler.on_join_attempt?(
        context, status.attempt, status.nextAttemptAt.since(now).clampedMilliseconds,
        status.giveUpAt.since(now).clampedMilliseconds)
    case .login: return  // the other profile's: never in this one's output
    }
  }

  private func joinSuccess(
    _ channel: ChannelName, _ uid: UInt32, _ elapsed: UInt32,
    callback: (
      @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UInt32, UInt32) -> Void
    )?
  ) {
    guard let callback else { return }
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: cStringsRoom) { buffer in
      guard writeCStrings(channel.bytes[...], [], into: buffer) != nil else { return }
      callback(context, buffer.baseAddress, uid, elapsed)
    }
  }
}
