// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherEdge

/// Never more out than in to an unvalidated address (docs/PROTOCOL.md §12.13).
struct AmplificationBudgetTests {
  @Test func spending_isAllowedUpToWhatWasReceived_notPast() {
    var budget = AmplificationBudget(received: 469)
    let response = budget.spend(269)
    let tooMuch = budget.spend(201)
    #expect(response && !tooMuch)
    #expect(budget.sent == 269 && budget.remaining == 200)
    #expect(budget.spend(200) && budget.remaining == 0)
    let more = budget.spend(1)
    #expect(!more)
    budget.receive(42)
    #expect(budget.spend(42) && budget.received == 511 && budget.sent == 511)
  }

  @Test func nothingReceived_allowsNothing_andSizesBelowZeroCountAsZero() {
    var budget = AmplificationBudget()
    #expect(!budget.spend(1) && budget.spend(0))
    budget.receive(-5)
    #expect(budget.received == 0 && budget.spend(-3) && budget.sent == 0)
  }

  /// §12.13's sizes: every answer to an INIT fits in the INIT's budget; the RESPONSE and
  /// CONFIRM carry the 176-byte ticket.
  @Test func everyAnswerToAnINIT_fitsItsBudget() {
    let ticket = TicketSealer<SeededCrypto>.sealedBytes
    #expect(77 + ticket + 16 == 269 && 9 + ticket + 16 == 201)
    for answer in [269, 73, 59, 18] {
      var budget = AmplificationBudget(received: 469)
      let fits = budget.spend(answer)
      #expect(fits, "\(answer) bytes")
    }
  }

  @Test func receiving_saturates() {
    var budget = AmplificationBudget(received: .max)
    budget.receive(.max)
    #expect(budget.received == UInt64.max - 1)
    budget.receive(.max)
    #expect(budget.received == .max && budget.remaining == .max)
  }
}
