// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The lateness histogram: bucket bounds, percentiles against an exact sorted reference,
/// the overflow bucket, and saturation.
@Suite struct LatencyHistogramTests {
  @Test func buckets_areExactBelow8_andAtMostAnEighthWideAbove() {
    for value: UInt64 in 0..<8 { #expect(LatencyHistogram.bucket(of: value) == Int(value)) }
    var previousUpper: UInt64 = 7
    for index in 8..<(LatencyHistogram.bucketCount - 1) {
      let upper = LatencyHistogram.upperBound(of: index)
      let lower = previousUpper + 1
      #expect(LatencyHistogram.bucket(of: lower) == index)
      #expect(LatencyHistogram.bucket(of: upper) == index)
      #expect((upper - lower + 1) * 8 <= lower)  // width ≤ 12.5 % of the bucket's floor
      previousUpper = upper
    }
    #expect(previousUpper == (1 << 36) - 1)
    #expect(LatencyHistogram.bucket(of: 1 << 36) == LatencyHistogram.bucketCount - 1)
    #expect(LatencyHistogram.bucket(of: .max) == LatencyHistogram.bucketCount - 1)
  }

  @Test func empty_reportsZero() {
    let h = LatencyHistogram()
    #expect(h.count == 0 && h.maximum == 0)
    #expect(h.percentile(permille: 500) == .zero)
  }

  @Test func percentiles_neverBelowTheTruth_andAtMostOneBucketAbove() {
    var random = SeededRandom(seed: 7)
    for _ in 0..<20 {
      var h = LatencyHistogram()
      var values: [UInt64] = []
      let n = Int(random.next() % 5000) + 1
      for _ in 0..<n {
        // Log-uniform over 1 ns ... 2^40 ns, overflow included.
        let value = random.next() >> (24 + random.next() % 40)
        values.append(value)
        h.record(Interval(nanoseconds: value))
      }
      values.sort()
      #expect(h.count == UInt64(n) && h.maximum == values.last)
      for permille: UInt32 in [0, 1, 500, 900, 990, 999, 1000] {
        let rank = max(1, (n * Int(permille) + 999) / 1000)
        let truth = values[rank - 1]
        let reported = h.percentile(permille: permille).nanoseconds
        #expect(reported >= truth)
        #expect(reported <= max(truth + truth / 8 + 1, truth) || truth >= 1 << 36)
        #expect(reported <= h.maximum)
      }
    }
  }

  @Test func theMaximumIsExact_evenInTheOverflowBucket() {
    var h = LatencyHistogram()
    h.record(.seconds(100))
    h.record(.milliseconds(1))
    #expect(h.maximum == Interval.seconds(100).nanoseconds)
    #expect(h.percentile(permille: 1000) == .seconds(100))
    #expect(h.percentile(permille: 500) <= .milliseconds(1) + .milliseconds(1))
  }

  @Test func permilleAbove1000_isTheMaximum() {
    var h = LatencyHistogram()
    for ms: UInt64 in 1...10 { h.record(.milliseconds(ms)) }
    #expect(h.percentile(permille: 5000) == .milliseconds(10))
  }
}
