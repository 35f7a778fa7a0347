// SPDX-License-Identifier: Apache-2.0
/// What a profile's config holds for its link (``LinkTiming``): the fields the channel's
/// and the login's share, so that what reads them (the C configs of both profiles) is
/// written once. Each config adds its own thresholds and checks them in ``validate()``.
public protocol LinkConfig {
  init(appID: AppID)
  var appID: AppID { get set }
  /// No proof of a round trip for this long: RECONNECTING/INTERRUPTED.
  var interruptedAfter: Interval { get set }
  /// A heartbeat goes to the server this often while CONNECTED.
  var heartbeatInterval: Interval { get set }
  /// How attempts are spaced while CONNECTING or RECONNECTING.
  var retry: RetryPolicy { get set }
  /// - Throws: ``TetherError/invalidArgument`` when a threshold is out of range.
  func validate() throws(TetherError)
}

extension ChannelConfig: LinkConfig {}
extension LoginConfig: LinkConfig {}
