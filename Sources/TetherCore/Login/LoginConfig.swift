// SPDX-License-Identifier: Apache-2.0
/// The login session's thresholds (docs/BEHAVIOUR.md §2), with the spec's defaults.
public struct LoginConfig: Sendable {
  public var appID: AppID
  /// No answer to the first login this long after the call: DISCONNECTED/LOGIN_TIMEOUT.
  /// Default 6 s.
  public var loginTimeout = Self.Defaults.loginTimeout
  /// No proof of a round trip for this long while CONNECTED: RECONNECTING/INTERRUPTED.
  /// Default 4 s.
  public var interruptedAfter = Self.Defaults.interruptedAfter
  /// A heartbeat goes to the server this often while CONNECTED. Default 1 s.
  public var heartbeatInterval = Self.Defaults.heartbeatInterval
  /// How login attempts are spaced while CONNECTING or RECONNECTING (the channel
  /// profile's backoff).
  public var retry = RetryPolicy()

  public init(appID: AppID) { self.appID = appID }

  /// The defaults, in one place: `tether_rtm_config_init` reads them too.
  public enum Defaults {
    public static let loginTimeout = Interval.seconds(6)
    public static let interruptedAfter = Interval.seconds(4)
    public static let heartbeatInterval = Interval.seconds(1)
  }

  /// - Throws: ``TetherError/invalidArgument`` when the link's timing does not validate
  ///   (``LinkTiming/validate()``) or `loginTimeout` is zero.
  public func validate() throws(TetherError) {
    try linkTiming.validate()
    guard loginTimeout != .zero else { throw .invalidArgument }
  }

  /// What the link runs on: no warning before the token expires, and its expiry counts
  /// only while reconnecting (while CONNECTED the server judges the token).
  var linkTiming: LinkTiming {
    LinkTiming(
      interruptedAfter: interruptedAfter, heartbeatInterval: heartbeatInterval, retry: retry,
      tokenWarningBefore: nil, tokenExpiresWhileLive: false)
  }
}
