// SPDX-License-Identifier: Apache-2.0
/// The channel session's thresholds (docs/BEHAVIOUR.md §1), all configurable, with the spec's
/// defaults. Tests and the demo scale them down together with the edge server's
/// `--time-scale`.
public struct ChannelConfig: Sendable {
  public var appID: AppID
  /// No data from the server for this long: RECONNECTING/INTERRUPTED. Also how long a
  /// remote member may stay silent before it is reported interrupted. Default 4 s.
  public var interruptedAfter = Self.Defaults.interruptedAfter
  /// Still no data this long after the last: RECONNECTING/LOST and connection-lost. 10 s.
  public var lostAfter = Self.Defaults.lostAfter
  /// A remote member silent this long is reported offline, DROPPED. Default 20 s.
  public var remoteOfflineAfter = Self.Defaults.remoteOfflineAfter
  /// No successful (re)join this long after the last data: FAILED/JOIN_FAILED. 20 min.
  public var giveUpAfter = Self.Defaults.giveUpAfter
  /// token-privilege-will-expire this long before the token expires. Default 30 s.
  public var tokenWillExpireBefore = Self.Defaults.tokenWillExpireBefore
  /// A heartbeat goes to the server this often while CONNECTED. Default 1 s.
  public var heartbeatInterval = Self.Defaults.heartbeatInterval
  /// How (re)join attempts are spaced while CONNECTING or RECONNECTING.
  public var retry = RetryPolicy()

  public init(appID: AppID) { self.appID = appID }

  /// The defaults, in one place: `tether_engine_config_init` reads them too.
  public enum Defaults {
    public static let interruptedAfter = Interval.seconds(4)
    public static let lostAfter = Interval.seconds(10)
    public static let remoteOfflineAfter = Interval.seconds(20)
    public static let giveUpAfter = Interval.seconds(20 * 60)
    public static let tokenWillExpireBefore = Interval.seconds(30)
    public static let heartbeatInterval = Interval.seconds(1)
  }

  /// Checks that every interval is usable and that the thresholds come in the order the
  /// timeline needs.
  /// - Throws: ``TetherError/invalidArgument`` when the link's timing does not validate
  ///   (``LinkTiming/validate()``), a threshold is zero, `lostAfter` is below
  ///   `interruptedAfter`, `giveUpAfter` below `lostAfter`, or `remoteOfflineAfter` below
  ///   `interruptedAfter` (a member would be dropped before it could be reported
  ///   interrupted).
  public func validate() throws(TetherError) {
    try linkTiming.validate()
    guard lostAfter >= interruptedAfter, giveUpAfter >= lostAfter,
      remoteOfflineAfter >= interruptedAfter, tokenWillExpireBefore != .zero
    else { throw .invalidArgument }
  }

  /// What the link runs on: the token is warned about and judged here, even while live.
  var linkTiming: LinkTiming {
    LinkTiming(
      interruptedAfter: interruptedAfter, heartbeatInterval: heartbeatInterval, retry: retry,
      tokenWarningBefore: tokenWillExpireBefore, tokenExpiresWhileLive: true)
  }
}
