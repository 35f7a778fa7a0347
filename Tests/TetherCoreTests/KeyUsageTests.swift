// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The limits of one handshake's keys: each counter is handed out once, in order, none
/// past the hard limit (so a nonce never repeats or wraps), and the soft and hard limits
/// on messages sealed and failed opens trip at exactly their numbers.
@Suite struct KeyUsageTests {
  static func limits(
    rekeyAfterMessages: UInt64 = .max, rejectAfterMessages: UInt64 = .max,
    rekeyAfterFailedOpens: UInt64 = .max, rejectAfterFailedOpens: UInt64 = .max
  ) -> KeyLimits {
    KeyLimits(
      rekeyAfterMessages: rekeyAfterMessages, rejectAfterMessages: rejectAfterMessages,
      rekeyAfterFailedOpens: rekeyAfterFailedOpens, rejectAfterFailedOpens: rejectAfterFailedOpens)
  }

  // MARK: - What ships

  @Test func standardLimits_areWireGuardsAndRFC9001s() {
    let standard = KeyLimits.standard
    #expect(standard.rekeyAfterMessages == 1_152_921_504_606_846_976)  // 2^60
    #expect(standard.rejectAfterMessages == 18_446_744_073_709_543_423)  // 2^64 - 2^13 - 1
    #expect(standard.rejectAfterFailedOpens == 68_719_476_736)  // 2^36
    #expect(standard.rekeyAfterFailedOpens == 34_359_738_368)  // 2^35
    #expect(KeyUsage().limits == standard)
    #expect(KeyUsage().status == .fresh)
  }

  // MARK: - Messages sealed

  @Test func counters_startAtZero_andAreHandedOutOnceInOrder_untilTheHardLimit() {
    var usage = KeyUsage(limits: Self.limits(rejectAfterMessages: 5))
    for expected: UInt64 in 0..<5 { #expect(usage.nextSendCounter() == expected) }
    #expect(usage.sealed == 5)
    #expect(usage.status == .exhausted)
    #expect(usage.nextSendCounter() == nil)
    #expect(usage.nextSendCounter() == nil)
    #expect(usage.sealed == 5)
  }

  @Test func messageLimits_tripAtExactlyTheirNumbers() {
    var usage = KeyUsage(limits: Self.limits(rekeyAfterMessages: 3, rejectAfterMessages: 7))
    var statuses: [KeyUsage.Status] = [usage.status]
    while usage.nextSendCounter() != nil { statuses.append(usage.status) }
    // statuses[n] is the status after n messages sealed.
    #expect(
      statuses == [.fresh, .fresh, .fresh] + Array(repeating: .rekeyDue, count: 4) + [.exhausted])
  }

  @Test func zeroHardLimit_sealsNothing() {
    var usage = KeyUsage(limits: Self.limits(rejectAfterMessages: 0))
    #expect(usage.status == .exhausted)
    #expect(usage.nextSendCounter() == nil)
  }

  @Test func standardHardLimit_handsOutItsLastCounter_thenRefuses() {
    var usage = KeyUsage()
    usage.sealed = KeyLimits.standard.rejectAfterMessages - 2
    #expect(usage.status == .rekeyDue)
    #expect(usage.nextSendCounter() == KeyLimits.standard.rejectAfterMessages - 2)
    #expect(usage.nextSendCounter() == KeyLimits.standard.rejectAfterMessages - 1)
    #expect(usage.status == .exhausted)
    #expect(usage.nextSendCounter() == nil)
  }

  @Test func counterAtTheTopOfTheRange_isRefused_neverWraps() {
    // The loosest limits there are: every counter below 2^64 - 1 may be used.
    var usage = KeyUsage(limits: Self.limits())
    usage.sealed = .max - 2
    #expect(usage.nextSendCounter() == UInt64.max - 2)
    #expect(usage.nextSendCounter() == UInt64.max - 1)
    #expect(usage.nextSendCounter() == nil)
    #expect(usage.nextSendCounter() == nil)
    #expect(usage.sealed == .max)
  }

  // MARK: - Failed opens

  @Test func failedOpenLimits_tripAtExactlyTheirNumbers_andStopSealing() {
    var usage = KeyUsage(limits: Self.limits(rekeyAfterFailedOpens: 2, rejectAfterFailedOpens: 4))
    var statuses: [KeyUsage.Status] = [usage.status]
    for _ in 0..<5 {
      usage.recordFailedOpen()
      statuses.append(usage.status)
    }
    #expect(statuses == [.fresh, .fresh, .rekeyDue, .rekeyDue, .exhausted, .exhausted])
    #expect(usage.failedOpens == 5)
    #expect(usage.nextSendCounter() == nil)
    #expect(!usage.mayOpen(counter: 0))
  }

  @Test func failedOpens_stopCountingAtTheTop_withoutTrapping() {
    var usage = KeyUsage()
    usage.failedOpens = .max - 1
    usage.recordFailedOpen()
    usage.recordFailedOpen()
    #expect(usage.failedOpens == .max)
    #expect(usage.status == .exhausted)
  }

  // MARK: - Received counters

  @Test func receivedCounter_mayBeOpened_onlyBelowTheHardLimit() {
    let usage = KeyUsage()
    let reject = KeyLimits.standard.rejectAfterMessages
    #expect(usage.mayOpen(counter: 0))
    #expect(usage.mayOpen(counter: reject - 1))
    #expect(!usage.mayOpen(counter: reject))
    #expect(!usage.mayOpen(counter: .max))
  }

  @Test func exhaustedSendingSide_opensNothingMore() {
    var usage = KeyUsage(limits: Self.limits(rejectAfterMessages: 1))
    #expect(usage.mayOpen(counter: 0))
    #expect(usage.nextSendCounter() == 0)
    #expect(!usage.mayOpen(counter: 0))
  }

  @Test func softLimitAboveTheHardOne_isNeverReported_andNothingTraps() {
    var usage = KeyUsage(limits: Self.limits(rekeyAfterMessages: 9, rejectAfterMessages: 2))
    #expect(usage.nextSendCounter() == 0)
    #expect(usage.status == .fresh)
    #expect(usage.nextSendCounter() == 1)
    #expect(usage.status == .exhausted)
  }

  // MARK: - Property: random use against the limits

  /// Random small limits and random interleavings of seals and failed opens: the status
  /// turns to rekeyDue at the first moment a count reaches its soft limit, to exhausted at
  /// the first moment one reaches its hard limit, and the counters handed out are 0, 1, 2...
  /// with no gap, none once exhausted.
  @Test(arguments: Array(UInt64(1)...20))
  func randomUse_tripsTheLimitsExactly(seed: UInt64) {
    var r = SeededRandom(seed: seed)
    for run in 0..<200 {
      let limits = Self.limits(
        rekeyAfterMessages: r.next() % 40, rejectAfterMessages: r.next() % 40,
        rekeyAfterFailedOpens: r.next() % 20, rejectAfterFailedOpens: r.next() % 20)
      var usage = KeyUsage(limits: limits)
      var sealed: UInt64 = 0
      var failed: UInt64 = 0
      for _ in 0..<80 {
        let exhausted =
          sealed >= limits.rejectAfterMessages || failed >= limits.rejectAfterFailedOpens
        if r.next() % 4 == 0 {
          usage.recordFailedOpen()
          failed += 1
        } else {
          let counter = usage.nextSendCounter()
          #expect(counter == (exhausted ? nil : sealed), "seed \(seed) run \(run)")
          if !exhausted { sealed += 1 }
        }
        let expected: KeyUsage.Status =
          sealed >= limits.rejectAfterMessages || failed >= limits.rejectAfterFailedOpens
          ? .exhausted
          : sealed >= limits.rekeyAfterMessages || failed >= limits.rekeyAfterFailedOpens
            ? .rekeyDue : .fresh
        #expect(
          usage.status == expected, "seed \(seed) run \(run) sealed \(sealed) failed \(failed)")
        #expect(usage.sealed == sealed && usage.failedOpens == failed)
      }
    }
  }
}
