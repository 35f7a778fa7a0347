// SPDX-License-Identifier: Apache-2.0
/// The negative return codes of the public calls of both profiles (docs/BEHAVIOUR.md
/// §4.3), with the values of `tether.h`'s `TETHER_ERR_*`: one space, where a value means
/// one condition whichever function returns it. New codes may be added; existing ones
/// never change.
public enum TetherError: Int32, Error, CaseIterable, Sendable {
  /// `TETHER_ERR_FAILED`: a general failure with no more specific code.
  case failed = -1
  /// `TETHER_ERR_INVALID_ARGUMENT`: a NULL or out-of-range argument or config field.
  case invalidArgument = -2
  /// `TETHER_ERR_NOT_READY`: the call does not apply in the current state.
  case notReady = -3
  /// `TETHER_ERR_NOT_INITIALIZED`: the handle is not (or no longer) a live engine or client.
  case notInitialized = -7
  /// `TETHER_ERR_JOIN_CHANNEL_REJECTED`: join while not DISCONNECTED.
  case joinChannelRejected = -17
  /// `TETHER_ERR_INVALID_APP_ID`: the app id is empty, too long or not printable ASCII.
  case invalidAppID = -101
  /// `TETHER_ERR_INVALID_CHANNEL_NAME`: empty, over 63 bytes, or a byte outside the set.
  case invalidChannelName = -102
  /// `TETHER_ERR_TOKEN_EXPIRED`.
  case tokenExpired = -109
  /// `TETHER_ERR_INVALID_TOKEN`: over 512 bytes, or a byte that is not printable ASCII.
  case invalidToken = -110
  /// `TETHER_ERR_INVALID_USER_ID`.
  case invalidUserID = -121
  /// `TETHER_ERR_ALREADY_LOGGED_IN`: a login while not DISCONNECTED (ABORTED included).
  case alreadyLoggedIn = -208
  /// `TETHER_ERR_TOO_OFTEN`: a third login call within one second.
  case tooOften = -210
  /// `TETHER_ERR_NOT_LOGGED_IN`: a logout while DISCONNECTED.
  case notLoggedIn = -302
  /// `TETHER_ERR_WRONG_THREAD`: a call from a thread other than its loop's.
  case wrongThread = -1000

  /// The C spelling without its `TETHER_` prefix, as `tether_error_name` returns it.
  public var name: StaticString {
    switch self {
    case .failed: "ERR_FAILED"
    case .invalidArgument: "ERR_INVALID_ARGUMENT"
    case .notReady: "ERR_NOT_READY"
    case .notInitialized: "ERR_NOT_INITIALIZED"
    case .joinChannelRejected: "ERR_JOIN_CHANNEL_REJECTED"
    case .invalidAppID: "ERR_INVALID_APP_ID"
    case .invalidChannelName: "ERR_INVALID_CHANNEL_NAME"
    case .tokenExpired: "ERR_TOKEN_EXPIRED"
    case .invalidToken: "ERR_INVALID_TOKEN"
    case .invalidUserID: "ERR_INVALID_USER_ID"
    case .alreadyLoggedIn: "ERR_ALREADY_LOGGED_IN"
    case .tooOften: "ERR_TOO_OFTEN"
    case .notLoggedIn: "ERR_NOT_LOGGED_IN"
    case .wrongThread: "ERR_WRONG_THREAD"
    }
  }
}
