// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The loop's queue of engine deadline windows: ordered by their ends, popped while their
/// starts have come; checked against a brute-force model under random operations.
@Suite struct DeadlineQueueTests {
  static func exact(_ ms: UInt64) -> DeadlineWindow { DeadlineWindow(start: .ms(ms)) }
  static func window(_ start: UInt64, _ end: UInt64) -> DeadlineWindow {
    DeadlineWindow(start: .ms(start), slack: .ms(end - start))
  }

  @Test func empty_hasNoWakeUp_andPopsNothing() {
    var q = DeadlineQueue()
    #expect(q.nextWakeUp == nil && q.count == 0)
    #expect(q.popStarted(by: .s(100)) == nil)
  }

  @Test func exactDeadlines_popInOrder_onlyWhenDue() {
    var q = DeadlineQueue()
    q.schedule(3, Self.exact(30))
    q.schedule(1, Self.exact(10))
    q.schedule(2, Self.exact(20))
    #expect(q.nextWakeUp == .ms(10))
    #expect(q.popStarted(by: .ms(9)) == nil)
    #expect(q.popStarted(by: .ms(25))?.slot == 1)
    #expect(q.popStarted(by: .ms(25))?.slot == 2)
    #expect(q.popStarted(by: .ms(25)) == nil)
    #expect(q.window(of: 3) == Self.exact(30) && q.window(of: 1) == nil)
  }

  @Test func overlappingWindows_shareTheWakeUpOfTheEarliestEnd() {
    var q = DeadlineQueue()
    q.schedule(0, Self.window(0, 62))
    q.schedule(1, Self.window(40, 102))
    q.schedule(2, Self.window(70, 132))
    #expect(q.nextWakeUp == .ms(62))
    #expect(q.popStarted(by: .ms(62))?.slot == 0)
    #expect(q.popStarted(by: .ms(62))?.slot == 1)  // started at 40: goes along
    #expect(q.popStarted(by: .ms(62)) == nil)  // starts at 70: waits
    #expect(q.nextWakeUp == .ms(132))
  }

  @Test func withoutEarly_onlyWindowsThatHaveEnded_pop() {
    var q = DeadlineQueue()
    q.schedule(0, Self.window(0, 62))
    q.schedule(1, Self.window(10, 50))
    #expect(q.popStarted(by: .ms(55), early: false)?.slot == 1)
    #expect(q.popStarted(by: .ms(55), early: false) == nil)  // started, not ended
    #expect(q.popStarted(by: .ms(55))?.slot == 0)
  }

  @Test func anExactDeadline_wakesAtItsInstant_andTakesStartedWindowsAlong() {
    var q = DeadlineQueue()
    q.schedule(0, Self.window(0, 62))
    q.schedule(1, Self.exact(30))
    #expect(q.nextWakeUp == .ms(30))
    #expect(q.popStarted(by: .ms(30))?.slot == 1)
    #expect(q.popStarted(by: .ms(30))?.slot == 0)
  }

  @Test func movingAWindow_reordersIt_andNilRemovesIt() {
    var q = DeadlineQueue()
    q.schedule(0, Self.exact(10))
    q.schedule(1, Self.exact(20))
    q.schedule(0, Self.exact(30))
    #expect(q.nextWakeUp == .ms(20))
    q.schedule(0, Self.exact(5))
    #expect(q.nextWakeUp == .ms(5))
    q.schedule(0, nil)
    #expect(q.nextWakeUp == .ms(20) && q.count == 1)
    q.schedule(0, nil)
    q.schedule(-1, Self.exact(1))
    #expect(q.count == 1)
  }

  @Test func matchesABruteForceModel_underRandomOperations() {
    var random = SeededRandom(seed: 42)
    var q = DeadlineQueue()
    var model: [Int32: DeadlineWindow] = [:]
    var now: UInt64 = 0
    for _ in 0..<20_000 {
      let slot = Int32(random.next() % 64)
      switch random.next() % 4 {
      case 0, 1:
        let start = now + random.next() % 1000
        let window = DeadlineWindow(
          start: Instant(nanoseconds: start), slack: Interval(nanoseconds: random.next() % 3 * 40))
        q.schedule(slot, window)
        model[slot] = window
      case 2:
        q.schedule(slot, nil)
        model[slot] = nil
      default:
        now += random.next() % 50
        let at = Instant(nanoseconds: now)
        while let popped = q.popStarted(by: at) {
          #expect(model[popped.slot] == popped.window)
          #expect(popped.window.start <= at)
          #expect(popped.window.end == model.values.map(\.end).min())
          model[popped.slot] = nil
        }
        // What is left did not have to run yet: an owner with the earliest end has not
        // started (others with the same end wait for that wake-up).
        if let end = model.values.map(\.end).min() {
          #expect(model.values.contains { $0.end == end && $0.start > at })
        }
      }
      #expect(q.count == model.count)
      #expect(q.nextWakeUp == model.values.map(\.end).min())
      #expect(q.window(of: slot) == model[slot])
    }
  }
}
