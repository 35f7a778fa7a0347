// SPDX-License-Identifier: Apache-2.0
/// The channel session's connection state (docs/BEHAVIOUR.md §1), numbered as in `tether.h`.
public enum ConnectionState: Int32, CaseIterable, Sendable {
  case disconnected = 1
  case connecting = 2
  case connected = 3
  case reconnecting = 4
  case failed = 5

  /// The C spelling without its prefix (`TETHER_CONNECTION_STATE_` + name).
  public var name: StaticString { stateName(rawValue, fifth: "FAILED") }
}

/// The C spelling of a state of either profile: the first four are the same in both (and
/// numbered alike), the fifth is the profile's own end.
func stateName(_ value: Int32, fifth: StaticString) -> StaticString {
  switch value {
  case 1: "DISCONNECTED"
  case 2: "CONNECTING"
  case 3: "CONNECTED"
  case 4: "RECONNECTING"
  default: fifth
  }
}

/// Why the connection state changed (docs/BEHAVIOUR.md §1). 17 and 20–24 are the vendor's and are
/// reserved: they are never produced and never reused.
public enum ConnectionChangedReason: Int32, CaseIterable, Sendable {
  case connecting = 0
  case joinSuccess = 1
  case interrupted = 2
  case bannedByServer = 3
  case joinFailed = 4
  case leaveChannel = 5
  case invalidAppID = 6
  case invalidChannelName = 7
  case invalidToken = 8
  case tokenExpired = 9
  case rejectedByServer = 10
  case settingProxyServer = 11
  case renewToken = 12
  case clientIPAddressChanged = 13
  case keepAliveTimeout = 14
  case rejoinSuccess = 15
  case lost = 16
  case clientIPAddressChangedByUser = 18
  case sameUIDLogin = 19

  /// The one state docs/BEHAVIOUR.md §1.2 pairs this reason with.
  public var state: ConnectionState {
    switch self {
    case .connecting: .connecting
    case .joinSuccess, .rejoinSuccess: .connected
    case .leaveChannel, .invalidToken: .disconnected
    case .interrupted, .settingProxyServer, .renewToken, .clientIPAddressChanged,
      .keepAliveTimeout, .lost, .clientIPAddressChangedByUser:
      .reconnecting
    case .bannedByServer, .joinFailed, .invalidAppID, .invalidChannelName, .tokenExpired,
      .rejectedByServer, .sameUIDLogin:
      .failed
    }
  }

  /// The C spelling without its prefix (`TETHER_CONNECTION_CHANGED_` + name).
  public var name: StaticString {
    switch self {
    case .connecting: "CONNECTING"
    case .joinSuccess: "JOIN_SUCCESS"
    case .interrupted: "INTERRUPTED"
    case .bannedByServer: "BANNED_BY_SERVER"
    case .joinFailed: "JOIN_FAILED"
    case .leaveChannel: "LEAVE_CHANNEL"
    case .invalidAppID: "INVALID_APP_ID"
    case .invalidChannelName: "INVALID_CHANNEL_NAME"
    case .invalidToken: "INVALID_TOKEN"
    case .tokenExpired: "TOKEN_EXPIRED"
    case .rejectedByServer: "REJECTED_BY_SERVER"
    case .settingProxyServer: "SETTING_PROXY_SERVER"
    case .renewToken: "RENEW_TOKEN"
    case .clientIPAddressChanged: "CLIENT_IP_ADDRESS_CHANGED"
    case .keepAliveTimeout: "KEEP_ALIVE_TIMEOUT"
    case .rejoinSuccess: "REJOIN_SUCCESS"
    case .lost: "LOST"
    case .clientIPAddressChangedByUser: "CLIENT_IP_ADDRESS_CHANGED_BY_USER"
    case .sameUIDLogin: "SAME_UID_LOGIN"
    }
  }
}

/// Why a remote member is reported offline (docs/BEHAVIOUR.md §1).
public enum UserOfflineReason: Int32, CaseIterable, Sendable {
  /// The member left the channel (the server relayed its leave).
  case quit = 0
  /// Nothing was heard from the member for `remoteOfflineAfter`.
  case dropped = 1
  /// Reserved by the vendor's numbering; never produced.
  case becomeAudience = 2

  public var name: StaticString {
    switch self {
    case .quit: "QUIT"
    case .dropped: "DROPPED"
    case .becomeAudience: "BECOME_AUDIENCE"
    }
  }
}
