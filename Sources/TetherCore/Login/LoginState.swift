// SPDX-License-Identifier: Apache-2.0
/// The login session's connection state (docs/BEHAVIOUR.md §2), numbered as in `tether.h`
/// (`TETHER_RTM_CONNECTION_STATE_*`).
public enum LoginState: Int32, CaseIterable, Sendable {
  case disconnected = 1
  case connecting = 2
  case connected = 3
  case reconnecting = 4
  /// Another login of the same user id, or a ban, ended the session: the app must log
  /// out, then log in again.
  case aborted = 5

  /// The C spelling without its prefix (`TETHER_RTM_CONNECTION_STATE_` + name).
  public var name: StaticString { stateName(rawValue, fifth: "ABORTED") }
}

/// Why the login session's state changed (docs/BEHAVIOUR.md §2), numbered as in `tether.h`
/// (`TETHER_RTM_CONNECTION_CHANGE_REASON_*`).
public enum LoginChangeReason: Int32, CaseIterable, Sendable {
  case login = 1
  case loginSuccess = 2
  case loginFailure = 3
  case loginTimeout = 4
  case interrupted = 5
  case logout = 6
  case bannedByServer = 7
  case remoteLogin = 8
  case tokenExpired = 9

  /// The one state each reason goes with.
  public var state: LoginState {
    switch self {
    case .login: .connecting
    case .loginSuccess: .connected
    case .loginFailure, .loginTimeout, .logout, .tokenExpired: .disconnected
    case .interrupted: .reconnecting
    case .bannedByServer, .remoteLogin: .aborted
    }
  }

  /// The C spelling without its prefix.
  public var name: StaticString {
    switch self {
    case .login: "LOGIN"
    case .loginSuccess: "LOGIN_SUCCESS"
    case .loginFailure: "LOGIN_FAILURE"
    case .loginTimeout: "LOGIN_TIMEOUT"
    case .interrupted: "INTERRUPTED"
    case .logout: "LOGOUT"
    case .bannedByServer: "BANNED_BY_SERVER"
    case .remoteLogin: "REMOTE_LOGIN"
    case .tokenExpired: "TOKEN_EXPIRED"
    }
  }
}

/// The login error codes of docs/BEHAVIOUR.md §2.4 (`TETHER_RTM_LOGIN_ERR_*`): a `login` refused on
/// the spot throws one (the C call returns the matching `TETHER_ERR_*` code instead: one
/// error space); a started attempt reports one through ``LoginNotification/loginResult(_:)``.
public enum LoginError: Int32, Error, CaseIterable, Sendable {
  case ok = 0
  /// The attempt ended without the server's verdict (the app logged out first, the session
  /// was taken over) or with a code this build does not know.
  case unknown = 1
  /// The server refused the login (e.g. its per-source login limit).
  case rejected = 2
  /// The token or user id is malformed, or missing (checked before anything is sent).
  case invalidArgument = 3
  /// The server does not know the app id.
  case invalidAppID = 4
  /// The token does not verify for this app and user id.
  case invalidToken = 5
  /// The token has expired.
  case tokenExpired = 6
  /// The user id is banned by the server.
  case notAuthorized = 7
  /// `login` while not DISCONNECTED (ABORTED included: log out first).
  case alreadyLogin = 8
  /// No answer within `login_timeout`.
  case timeout = 9
  /// More than 2 `login` calls within a second.
  case tooOften = 10
  /// The client handle is not (or no longer) a live client.
  case notInitialized = 101

  /// The login error a server's LOGIN_REFUSE code stands for: only the codes a server
  /// sends; anything else is UNKNOWN.
  public init(refusal code: UInt8) {
    switch code {
    case 2: self = .rejected
    case 4: self = .invalidAppID
    case 5: self = .invalidToken
    case 6: self = .tokenExpired
    case 7: self = .notAuthorized
    default: self = .unknown
    }
  }

  public var name: StaticString {
    switch self {
    case .ok: "LOGIN_ERR_OK"
    case .unknown: "LOGIN_ERR_UNKNOWN"
    case .rejected: "LOGIN_ERR_REJECTED"
    case .invalidArgument: "LOGIN_ERR_INVALID_ARGUMENT"
    case .invalidAppID: "LOGIN_ERR_INVALID_APP_ID"
    case .invalidToken: "LOGIN_ERR_INVALID_TOKEN"
    case .tokenExpired: "LOGIN_ERR_TOKEN_EXPIRED"
    case .notAuthorized: "LOGIN_ERR_NOT_AUTHORIZED"
    case .alreadyLogin: "LOGIN_ERR_ALREADY_LOGIN"
    case .timeout: "LOGIN_ERR_TIMEOUT"
    case .tooOften: "LOGIN_ERR_TOO_OFTEN"
    case .notInitialized: "LOGIN_ERR_NOT_INITIALIZED"
    }
  }
}

/// The logout error codes of docs/BEHAVIOUR.md §2 (`TETHER_RTM_LOGOUT_ERR_*`).
public enum LogoutError: Int32, Error, CaseIterable, Sendable {
  case ok = 0
  /// The call was refused: made from another thread than the client's loop's.
  case rejected = 1
  /// The client handle is not (or no longer) a live client.
  case notInitialized = 101
  /// `logout` while DISCONNECTED.
  case notLoggedIn = 102

  public var name: StaticString {
    switch self {
    case .ok: "LOGOUT_ERR_OK"
    case .rejected: "LOGOUT_ERR_REJECTED"
    case .notInitialized: "LOGOUT_ERR_NOT_INITIALIZED"
    case .notLoggedIn: "LOGOUT_ERR_NOT_LOGGED_IN"
    }
  }
}
