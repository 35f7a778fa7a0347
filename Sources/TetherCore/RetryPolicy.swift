// SPDX-License-Identifier: Apache-2.0
/// How (re)join attempts are spaced: the first at once, then exponential backoff with
/// full jitter, capped.
///
/// After attempt `n` (1, 2, ...) the next comes after
/// `max(base / 4, uniform(0 ... min(cap, base * 2^(n-1))))`.
/// The floor keeps a random draw of zero from turning into a burst of attempts.
/// Defaults: base 500 ms, cap 8 s, so a healed link is noticed within 8 s at worst and
/// about 4 s on average once the backoff is at its cap.
public struct RetryPolicy: Sendable {
  public var base: Interval = .milliseconds(500)
  public var cap: Interval = .seconds(8)

  public init() {}

  public init(base: Interval, cap: Interval) {
    self.base = base
    self.cap = cap
  }

  /// The largest delay that may follow attempt `attempt` (1-based).
  public func ceiling(afterAttempt attempt: UInt32) -> Interval {
    let doublings = UInt64(attempt > 0 ? attempt - 1 : 0)
    guard doublings < 63 else { return cap }
    let (scaled, overflow) = base.nanoseconds.multipliedReportingOverflow(by: 1 << doublings)
    return overflow ? cap : min(cap, Interval(nanoseconds: scaled))
  }

  /// The smallest delay between two attempts.
  public var floor: Interval { Interval(nanoseconds: base.nanoseconds / 4) }

  /// The delay before the attempt that follows attempt `attempt`, drawn from `random`.
  public func delay<R: RandomNumberGenerator>(afterAttempt attempt: UInt32, using random: inout R)
    -> Interval
  {
    delay(afterAttempt: attempt, draw: random.next())
  }

  /// The delay before the attempt that follows attempt `attempt`, placed by `draw`, one
  /// uniform random number.
  public func delay(afterAttempt attempt: UInt32, draw: UInt64) -> Interval {
    // One draw scaled by multiply-high: uniform enough, and bounded in time whatever the
    // generator returns (the standard library's rejection sampling may loop).
    let ceiling = ceiling(afterAttempt: attempt).nanoseconds
    let drawn = ceiling == .max ? draw : draw.multipliedFullWidth(by: ceiling + 1).high
    return max(floor, Interval(nanoseconds: drawn))
  }
}

/// Where a (re)join effort stands: observable through ``ChannelSession/retryStatus`` and
/// reported with every attempt (``ChannelNotification/joinAttempt(_:)``), so a retry is
/// never silent and never endless.
public struct RetryStatus: Equatable, Sendable {
  /// 1 for the first JOIN of this effort, then 2, 3, ...
  public var attempt: UInt32
  /// When the next attempt goes out if no answer comes first.
  public var nextAttemptAt: Instant
  /// When the effort stops with FAILED/JOIN_FAILED.
  public var giveUpAt: Instant

  /// Time left before giving up, seen from `now`.
  public func timeLeft(at now: Instant) -> Interval { giveUpAt.since(now) }
}
