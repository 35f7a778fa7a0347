// SPDX-License-Identifier: Apache-2.0
/// A fixed-size log-linear histogram of durations in nanoseconds: how late deadlines fired.
///
/// Values below 8 ns have a bucket each; above, every power of two is split into 8 equal
/// buckets, so a bucket is at most 12.5 % wide, up to 2³⁶ ns (68.7 s); longer values share
/// one overflow bucket (the exact maximum is kept beside). 273 counters of 32 bits, stored
/// inline: recording costs a count of leading zeros, a shift and an increment, and never
/// allocates. The layout is the one of HdrHistogram with 3 significant bits.
public struct LatencyHistogram: Sendable {
  /// Sub-buckets per power of two, as a power of two.
  static let subBits = 3
  static let subCount = 1 << subBits
  /// Values from 2^topExponent up land in the overflow bucket.
  static let topExponent = 36
  static let bucketCount = subCount + (topExponent - subBits) * subCount + 1

  private var counts = InlineArray<273, UInt32>(repeating: 0)
  /// Values recorded (saturating).
  public private(set) var count: UInt64 = 0
  /// The largest value recorded, exactly.
  public private(set) var maximum: UInt64 = 0

  public init() {}

  /// Records one duration.
  public mutating func record(_ interval: Interval) {
    let value = interval.nanoseconds
    let index = Self.bucket(of: value)
    if counts[index] != .max { counts[index] += 1 }
    if count != .max { count += 1 }
    if value > maximum { maximum = value }
  }

  /// The value at or below which `permille`/1000 of the recorded values lie, reported as
  /// the upper bound of its bucket: never below the true value, at most one bucket (12.5 %)
  /// above it, and never above the maximum. Zero when nothing was recorded. `permille` is
  /// clamped to 0...1000 (1000: the maximum).
  public func percentile(permille: UInt32) -> Interval {
    guard count > 0 else { return .zero }
    let p = UInt64(min(permille, 1000))
    let wanted = max(1, (count / 1000) * p + ((count % 1000) * p + 999) / 1000)
    var seen: UInt64 = 0
    for index in 0..<Self.bucketCount {
      seen += UInt64(counts[index])
      if seen >= wanted {
        return Interval(nanoseconds: min(Self.upperBound(of: index), maximum))
      }
    }
    return Interval(nanoseconds: maximum)
  }

  /// The bucket of `value`.
  static func bucket(of value: UInt64) -> Int {
    guard value >= UInt64(subCount) else { return Int(value) }
    let exponent = 63 - value.leadingZeroBitCount
    guard exponent < topExponent else { return bucketCount - 1 }
    let shift = exponent - subBits
    let sub = Int(truncatingIfNeeded: value >> UInt64(shift)) - subCount
    return subCount + shift * subCount + sub
  }

  /// The largest value that falls in bucket `index` (UInt64.max for the overflow bucket).
  static func upperBound(of index: Int) -> UInt64 {
    guard index >= subCount else { return UInt64(index) }
    guard index < bucketCount - 1 else { return .max }
    let shift = (index - subCount) / subCount
    let sub = UInt64((index - subCount) % subCount + subCount)
    return ((sub + 1) << UInt64(shift)) - 1
  }
}
