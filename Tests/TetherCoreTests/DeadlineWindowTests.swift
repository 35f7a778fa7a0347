// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The window the session gives its driver: heartbeats may run up to 1/16 of their
/// interval late, join attempts 1/8 of the retry base (so a loop's engines share
/// wake-ups); everything the app sees is exact.
@Suite struct DeadlineWindowTests {
  @Test func connected_theHeartbeatWindow_isAnEighthOfTheInterval_overTwo() {
    let h = Harness.connected()
    let window = h.session.nextDeadlineWindow
    #expect(window?.start == h.now + .ms(1000))
    #expect(window?.end == h.now + .ms(1000) + .ms(62) + Interval(nanoseconds: 500_000))
    #expect(window?.start == h.session.nextDeadline)
  }

  @Test func aThresholdInsideTheHeartbeatsSlack_endsTheWindowExactlyAtIt() {
    var config = Fixture.config
    config.heartbeatInterval = .ms(3000)  // slack 187.5 ms
    config.interruptedAfter = .ms(3100)
    let h = Harness.connected(config: config)
    let window = h.session.nextDeadlineWindow
    #expect(window?.start == h.now + .ms(3000))
    #expect(window?.end == h.now + .ms(3100))  // INTERRUPTED: no slack
  }

  @Test func reconnecting_aRetrysWindow_isAnEighthOfTheRetryBase() throws {
    var h = Harness.connected()
    h.run(for: .ms(4500))  // no acks: INTERRUPTED at 4 s, then retries
    #expect(h.state == .reconnecting)
    let window = try #require(h.session.nextDeadlineWindow)
    #expect(window.start == h.session.nextDeadline)
    // The default base is 500 ms: slack 62.5 ms. LOST (10 s after the last answer) is
    // later than any retry due now plus its slack, so nothing exact ends the window first.
    #expect(window.end == window.start + .ms(62) + Interval(nanoseconds: 500_000))
  }

  /// A retry base of 8 s (slack 1 s): whatever the draw, the window after INTERRUPTED's
  /// first attempt ends at the retry plus 1 s or at LOST (10 s after the last answer),
  /// whichever is first: a threshold inside a retry's slack is never late.
  @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
  func aThresholdInsideARetrysSlack_endsTheWindowExactlyAtIt(seed: UInt64) throws {
    var config = Fixture.config
    config.retry = RetryPolicy(base: .ms(8000), cap: .ms(8000))
    var h = Harness(config: config, seed: seed)
    try h.join()
    h.run(for: .ms(200))
    h.accept(tokenTimeLeftMs: 0)
    let lostAt = h.now + .ms(10_000)
    h.run(for: .ms(4500))
    #expect(h.state == .reconnecting)
    let window = try #require(h.session.nextDeadlineWindow)
    #expect(window.start == h.session.nextDeadline)
    #expect(window.end == min(window.start + .ms(1000), lostAt))
  }

  @Test func disconnected_hasNoWindow() {
    let h = Harness()
    #expect(h.session.nextDeadlineWindow == nil)
  }

  @Test func merged_takesTheEarliestStart_andTheEarliestEnd() {
    let heartbeat = DeadlineWindow(start: .ms(100), slack: .ms(60))
    let threshold = DeadlineWindow(start: .ms(120))
    let merged = heartbeat.merged(with: threshold)
    #expect(merged.start == .ms(100) && merged.end == .ms(120))
    #expect(threshold.merged(with: heartbeat) == merged)
  }
}
