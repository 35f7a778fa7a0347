// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The window the session gives its driver: heartbeats may run up to 1/16 of their
/// interval late (so a loop's engines share wake-ups); everything the app sees is exact.
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

  @Test func reconnecting_retriesAndThresholds_haveNoSlack() {
    var h = Harness.connected()
    h.run(for: .ms(4500))  // no acks: INTERRUPTED at 4 s, then retries
    #expect(h.state == .reconnecting)
    let window = h.session.nextDeadlineWindow
    #expect(window != nil && window?.start == window?.end)
    #expect(window?.start == h.session.nextDeadline)
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
