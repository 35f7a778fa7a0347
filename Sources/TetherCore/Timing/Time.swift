// SPDX-License-Identifier: Apache-2.0
/// A point on the host's monotonic clock, in nanoseconds.
///
/// The core never reads a clock: every entry point takes `now` as an `Instant` and the
/// session reports its next deadline as one. The driver converts its clock (libev's
/// `ev_now()`, a `double`) once, at the edge. Arithmetic saturates instead of trapping,
/// so no value that came from outside (a config field, a packet's age) can crash the core.
public struct Instant: Comparable, Hashable, Sendable {
  public var nanoseconds: UInt64

  @inlinable
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  public static let zero = Instant(nanoseconds: 0)

  @inlinable
  public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

  /// `self + interval`, saturating at the end of time.
  @inlinable
  public static func + (lhs: Instant, rhs: Interval) -> Instant {
    let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.nanoseconds)
    return Instant(nanoseconds: overflow ? UInt64.max : sum)
  }

  /// `self - interval`, saturating at zero.
  @inlinable
  public static func - (lhs: Instant, rhs: Interval) -> Instant {
    Instant(nanoseconds: lhs.nanoseconds > rhs.nanoseconds ? lhs.nanoseconds - rhs.nanoseconds : 0)
  }

  /// The time from `earlier` to `self`; zero when `earlier` is later.
  @inlinable
  public func since(_ earlier: Instant) -> Interval {
    Interval(nanoseconds: nanoseconds > earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0)
  }
}

/// A non-negative length of time, in nanoseconds (the core's own, to stay clear of
/// `Swift.Duration`, whose arithmetic traps and whose 128-bit storage the core has no use for).
public struct Interval: Comparable, Hashable, Sendable {
  public var nanoseconds: UInt64

  @inlinable
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  public static let zero = Interval(nanoseconds: 0)

  @inlinable
  public static func milliseconds(_ ms: UInt64) -> Interval {
    let (ns, overflow) = ms.multipliedReportingOverflow(by: 1_000_000)
    return Interval(nanoseconds: overflow ? UInt64.max : ns)
  }

  @inlinable
  public static func seconds(_ s: UInt64) -> Interval {
    .milliseconds(s.multipliedReportingOverflow(by: 1000).overflow ? UInt64.max : s * 1000)
  }

  @inlinable
  public static func < (lhs: Interval, rhs: Interval) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

  @inlinable
  public static func + (lhs: Interval, rhs: Interval) -> Interval {
    let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.nanoseconds)
    return Interval(nanoseconds: overflow ? UInt64.max : sum)
  }

  /// Whole milliseconds, rounded down and clamped to `UInt32` (what callbacks carry).
  @inlinable
  public var clampedMilliseconds: UInt32 {
    let ms = nanoseconds / 1_000_000
    return ms > UInt64(UInt32.max) ? UInt32.max : UInt32(ms)
  }
}
