import Testing
import TetherSim

@testable import TetherCore

/// The loop's queue of engine deadlines: against a brute-force model under random
/// schedule, move, remove and pop operations.
@Suite struct DeadlineQueueTests {
  @Test func empty_hasNoEarliest_andPopsNothing() {
    var q = DeadlineQueue()
    #expect(q.earliest == nil && q.count == 0)
    #expect(q.popEarliest(dueBy: .s(100)) == nil)
  }

  @Test func popsInDeadlineOrder_onlyWhatIsDue() {
    var q = DeadlineQueue()
    q.schedule(3, at: .ms(30))
    q.schedule(1, at: .ms(10))
    q.schedule(2, at: .ms(20))
    #expect(q.earliest?.slot == 1)
    #expect(q.popEarliest(dueBy: .ms(9)) == nil)
    #expect(q.popEarliest(dueBy: .ms(25))?.slot == 1)
    #expect(q.popEarliest(dueBy: .ms(25))?.slot == 2)
    #expect(q.popEarliest(dueBy: .ms(25)) == nil)
    #expect(q.deadline(of: 3) == .ms(30) && q.deadline(of: 1) == nil)
  }

  @Test func movingADeadline_laterOrEarlier_reordersIt_andNilRemovesIt() {
    var q = DeadlineQueue()
    q.schedule(0, at: .ms(10))
    q.schedule(1, at: .ms(20))
    q.schedule(0, at: .ms(30))
    #expect(q.earliest?.slot == 1)
    q.schedule(0, at: .ms(5))
    #expect(q.earliest?.slot == 0)
    q.schedule(0, at: nil)
    #expect(q.earliest?.slot == 1 && q.count == 1)
    q.schedule(0, at: nil)
    q.schedule(-1, at: .ms(1))
    #expect(q.count == 1)
  }

  @Test func matchesABruteForceModel_underRandomOperations() {
    var random = SeededRandom(seed: 42)
    var q = DeadlineQueue()
    var model: [Int32: UInt64] = [:]
    var now: UInt64 = 0
    for _ in 0..<20_000 {
      let slot = Int32(random.next() % 64)
      switch random.next() % 4 {
      case 0, 1:
        let at = now + random.next() % 1000
        q.schedule(slot, at: Instant(nanoseconds: at))
        model[slot] = at
      case 2:
        q.schedule(slot, at: nil)
        model[slot] = nil
      default:
        now += random.next() % 50
        while let popped = q.popEarliest(dueBy: Instant(nanoseconds: now)) {
          #expect(model[popped.slot] == popped.at.nanoseconds)
          #expect(popped.at.nanoseconds == model.values.min())
          model[popped.slot] = nil
        }
        #expect(model.values.allSatisfy { $0 > now })
      }
      #expect(q.count == model.count)
      #expect(q.earliest?.at.nanoseconds == model.values.min())
      #expect(q.deadline(of: slot)?.nanoseconds == model[slot])
    }
  }
}
