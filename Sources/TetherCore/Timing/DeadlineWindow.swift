// SPDX-License-Identifier: Apache-2.0
/// When a deadline may run: not before `start` (nothing is due earlier), and by `end`.
///
/// A threshold the app sees (INTERRUPTED, LOST, give-up, a token or member verdict) has no
/// slack: its window is one instant. A heartbeat only has to go out about on time, so its
/// window is longer, and the engines of one loop whose windows overlap share a wake-up
/// (as the kernel's hrtimer ranges do).
public struct DeadlineWindow: Equatable, Sendable {
  public var start: Instant
  public var end: Instant

  /// A window from `start` to `start + slack`.
  @inlinable
  public init(start: Instant, slack: Interval = .zero) {
    self.start = start
    self.end = start + slack
  }

  /// The window in which both `self` and `other` may run, if they overlap; otherwise
  /// whichever must run first, which is what a single wake-up for both can honour.
  @inlinable
  public func merged(with other: DeadlineWindow) -> DeadlineWindow {
    var merged = self
    merged.start = min(start, other.start)
    merged.end = min(end, other.end)
    return merged
  }
}
