// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// Exponential backoff with full jitter, capped, first retry at once; every attempt
/// reported with its number, the next attempt's time and the give-up time.
@Suite struct RetryTests {
  /// A generator stuck at one value, to reach the ends of the jitter range.
  struct Constant: RandomNumberGenerator {
    let value: UInt64
    mutating func next() -> UInt64 { value }
  }

  @Test func ceiling_doublesFromTheBase_upToTheCap() {
    let policy = RetryPolicy(base: .ms(500), cap: .ms(8000))
    let ceilings = (1...8).map { policy.ceiling(afterAttempt: UInt32($0)) }
    #expect(
      ceilings == [
        .ms(500), .ms(1000), .ms(2000), .ms(4000), .ms(8000), .ms(8000), .ms(8000), .ms(8000),
      ])
    #expect(policy.ceiling(afterAttempt: .max) == .ms(8000))
  }

  @Test func delay_staysBetweenTheFloorAndTheCeiling_forAnyRandomDraw() {
    let policy = RetryPolicy(base: .ms(500), cap: .ms(8000))
    var low = Constant(value: 0)
    var high = Constant(value: .max)
    var seeded = SeededRandom(seed: 7)
    for attempt in UInt32(1)...40 {
      #expect(policy.delay(afterAttempt: attempt, using: &low) == policy.floor)
      #expect(
        policy.delay(afterAttempt: attempt, using: &high) == policy.ceiling(afterAttempt: attempt))
      let d = policy.delay(afterAttempt: attempt, using: &seeded)
      #expect(d >= policy.floor && d <= policy.ceiling(afterAttempt: attempt))
    }
    #expect(policy.floor == .ms(125))
  }

  @Test func delays_areJittered_notAllTheSame() {
    let policy = RetryPolicy()
    var r = SeededRandom(seed: 3)
    let delays = Set((0..<50).map { _ in policy.delay(afterAttempt: 6, using: &r) })
    #expect(delays.count > 40)
  }

  @Test func attempts_areReportedWithNumberNextTimeAndGiveUp() {
    var h = Harness.connected()
    let lastData = h.now
    let mark = h.mark
    h.run(until: lastData + .seconds(60))
    let reports: [RetryStatus] = h.log[mark.log...].map(\.notification).compactMap {
      if case .joinAttempt(let s) = $0 { s } else { nil }
    }
    #expect(reports.count == h.joins(since: lastData).count)
    #expect(reports.map(\.attempt) == Array(1...UInt32(reports.count)))
    #expect(reports.allSatisfy { $0.giveUpAt == lastData + .seconds(1200) })
    // The first retry is at once (on INTERRUPTED); each next one at its announced time.
    let times = h.joins(since: lastData).map(\.at)
    #expect(times.first == lastData + .ms(4000))
    for (report, next) in zip(reports, times.dropFirst()) { #expect(report.nextAttemptAt == next) }
    #expect(h.session.retryStatus?.attempt == UInt32(reports.count))
    #expect(h.session.retryStatus?.timeLeft(at: h.now) == .seconds(1140))
  }

  @Test func joinAttempts_countsEveryJOINSent_firstJoinAndRejoinsAlike() {
    var h = Harness.connected()
    #expect(h.session.counters.joinAttempts == 1)
    h.run(for: .seconds(60))
    #expect(h.session.counters.joinAttempts == UInt64(h.joins().count))
    #expect(h.session.counters.joinAttempts > 2)
  }

  @Test func attempts_spreadOut_onceTheBackoffReachesItsCap() {
    var h = Harness.connected()
    h.run(for: .seconds(600))
    let times = h.joins().map(\.at.nanoseconds)
    let gaps = zip(times.dropFirst(), times).map { Interval(nanoseconds: $0 - $1) }
    #expect(gaps.allSatisfy { $0 >= .ms(125) && $0 <= .ms(8000) })
    // Far fewer than one a second: 600 s at up to 8 s apart, 4 s on average.
    #expect(times.count > 60 && times.count < 300)
  }

  @Test func aNetworkChange_startsTheBackoffOver_butNotTheGiveUpClock() {
    var h = Harness.connected()
    let lastData = h.now
    h.run(for: .seconds(60))
    h.networkChanged(byUser: true)
    #expect(h.session.retryStatus?.attempt == 1)
    #expect(h.session.retryStatus?.giveUpAt == lastData + .seconds(1200))
  }
}
