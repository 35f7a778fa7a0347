// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The replay window of protocol v2: a counter opens at most once, one older than the
/// window never opens, and only `accept` (after a datagram opened) changes the window.
@Suite struct ReplayWindowTests {
  static let width = ReplayWindow.width

  /// A window that accepted `counters`, in that order; each must have been fresh.
  static func window(accepting counters: [UInt64]) -> ReplayWindow {
    var window = ReplayWindow()
    for counter in counters { expectAccepted(&window, counter) }
    return window
  }

  /// `accept` is mutating, which `#expect` cannot call: these call it, then expect.
  static func expectAccepted(
    _ window: inout ReplayWindow, _ counter: UInt64, at location: SourceLocation = #_sourceLocation
  ) {
    let recorded = window.accept(counter)
    #expect(recorded, "accept \(counter)", sourceLocation: location)
  }

  static func expectRefused(
    _ window: inout ReplayWindow, _ counter: UInt64, at location: SourceLocation = #_sourceLocation
  ) {
    let recorded = window.accept(counter)
    #expect(!recorded, "accept \(counter)", sourceLocation: location)
  }

  // MARK: - Empty window

  @Test func emptyWindow_callsEveryCounterFresh_fromZeroToTheTop() {
    let window = ReplayWindow()
    #expect(window.isEmpty)
    for counter: UInt64 in [0, 1, 63, 64, 127, 128, 1 << 63, .max - 1, .max] {
      #expect(window.check(counter) == .fresh)
    }
  }

  @Test func counterZero_isAcceptedOnce() {
    var window = ReplayWindow()
    Self.expectAccepted(&window, 0)
    #expect(!window.isEmpty)
    #expect(window.check(0) == .repeated)
    Self.expectRefused(&window, 0)
    #expect(window.check(1) == .fresh)
  }

  @Test func topCounter_isAcceptedOnce_andTheWindowBelowItWorks() {
    var window = Self.window(accepting: [.max])
    #expect(window.check(.max) == .repeated)
    Self.expectRefused(&window, .max)
    #expect(window.check(.max - (Self.width - 1)) == .fresh)
    #expect(window.check(.max - Self.width) == .tooOld)
    #expect(window.check(0) == .tooOld)
    Self.expectAccepted(&window, .max - 1)
    #expect(window.check(.max - 1) == .repeated)
  }

  // MARK: - The window's edge

  @Test func oldestCounterInTheWindow_isFresh_andOneOlderIsTooOld() {
    var window = Self.window(accepting: [200])
    #expect(window.check(200 - (Self.width - 1)) == .fresh)
    #expect(window.check(200 - Self.width) == .tooOld)
    Self.expectAccepted(&window, 200 - (Self.width - 1))
    #expect(window.check(200 - (Self.width - 1)) == .repeated)
    // One more datagram on top pushes it out of the window: from now on too old.
    Self.expectAccepted(&window, 201)
    #expect(window.check(200 - (Self.width - 1)) == .tooOld)
    Self.expectRefused(&window, 200 - (Self.width - 1))
  }

  /// Slides across the boundary of the two words and past the window's end.
  @Test(arguments: [UInt64(1), 2, 63, 64, 65, 100, 126, 127, 128, 129, 1000])
  func seenCounter_staysRepeated_untilTheWindowSlidesPastIt(distance: UInt64) {
    var window = Self.window(accepting: [1000, 1001])
    Self.expectAccepted(&window, 1001 + distance)
    let expected: ReplayWindow.Verdict =
      distance + 1 < Self.width ? .repeated : .tooOld
    #expect(window.check(1000) == expected)
    #expect(window.check(1001) == (distance < Self.width ? .repeated : .tooOld))
    #expect(window.check(1001 + distance) == .repeated)
    // Counters between the two, never sent, are still open if the window reaches them.
    if distance > 1 {
      let between = 1001 + distance - 1
      #expect(window.check(between) == .fresh)
    }
  }

  // MARK: - Huge jumps

  @Test(arguments: [UInt64(1) << 32, UInt64(1) << 63, UInt64.max - 5])
  func hugeJump_forgetsEverythingBelowTheWindow_andNothingTraps(jump: UInt64) {
    var window = Self.window(accepting: [0, 1, 2, 5])
    Self.expectAccepted(&window, 5 + jump)
    for old: UInt64 in [0, 1, 2, 3, 4, 5] { #expect(window.check(old) == .tooOld) }
    #expect(window.check(5 + jump) == .repeated)
    #expect(window.check(5 + jump - 1) == .fresh)
  }

  @Test func jumpFromZeroToTheTop_leavesZeroTooOld() {
    let window = Self.window(accepting: [0, .max])
    #expect(window.check(0) == .tooOld)
    #expect(window.check(.max) == .repeated)
    #expect(window.highest == .max)
  }

  // MARK: - Check changes nothing; accept only what is fresh

  @Test func forgedHighCounter_thatFailsToOpen_leavesGenuineDatagramsAccepted() {
    var window = Self.window(accepting: [0, 1, 2])
    let before = window
    // The forgery is checked (fresh), then fails to open: `accept` is never called.
    #expect(window.check(1 << 62) == .fresh)
    #expect(window == before)
    for counter: UInt64 in [3, 4, 5] { Self.expectAccepted(&window, counter) }
    #expect(window.highest == 5)
  }

  @Test func acceptOfARepeatedOrTooOldCounter_changesNothing() {
    var window = Self.window(accepting: [300, 290])
    let before = window
    Self.expectRefused(&window, 300)
    Self.expectRefused(&window, 290)
    Self.expectRefused(&window, 300 - Self.width)
    Self.expectRefused(&window, 0)
    #expect(window == before)
  }

  // MARK: - Property: the window against a set of accepted counters

  /// What the window must answer, kept the simplest way: every counter ever accepted, and
  /// the highest. A counter is too old when it lies `width` or more below the highest.
  struct Reference {
    var accepted: Set<UInt64> = []
    var highest: UInt64?
    /// The accepted counters in the order they came, to draw duplicates from (a set's
    /// order changes from one run to the next: the sequence would not replay).
    var inOrder: [UInt64] = []

    func check(_ counter: UInt64) -> ReplayWindow.Verdict {
      guard let highest, counter <= highest else { return .fresh }
      if highest - counter >= ReplayWindow.width { return .tooOld }
      return accepted.contains(counter) ? .repeated : .fresh
    }

    mutating func accept(_ counter: UInt64) {
      accepted.insert(counter)
      inOrder.append(counter)
      highest = max(highest ?? counter, counter)
    }
  }

  /// A counter as a peer and an attacker would send them: mostly the next one or a little
  /// reordered, sometimes a duplicate, an old one, a huge jump, or the range's two ends.
  static func randomCounter(_ r: inout SeededRandom, after reference: Reference) -> UInt64 {
    let top = reference.highest ?? 0
    let pick = r.next() % 16
    switch pick {
    case 0...5: return top &+ 1 &+ r.next() % 3  // in order, or a small gap (wraps at the top)
    case 6, 7, 8: return top &- r.next() % (ReplayWindow.width + 8)  // reordered, or too old
    case 9, 10:  // a duplicate of something accepted
      guard !reference.inOrder.isEmpty else { return 0 }
      return reference.inOrder[Int(r.next() % UInt64(reference.inOrder.count))]
    case 11: return top &+ 1 &+ r.next() % 10_000  // a jump past the window
    case 12: return r.next()  // anywhere in the range
    case 13: return r.next() % 4  // near zero
    case 14: return .max &- r.next() % 4  // near the top
    default: return top &- (r.next() % 3) * 64  // on a word boundary
    }
  }

  /// 4,000 random sequences of 150 datagrams; about one in five fails to open. After each,
  /// the window and the reference agree on the datagram's counter and on a few counters
  /// around the highest; at the end of a sequence, on every counter near the highest.
  @Test(arguments: Array(UInt64(1)...20))
  func randomSequences_matchTheReference(seed: UInt64) {
    var r = SeededRandom(seed: seed)
    for sequence in 0..<200 {
      var window = ReplayWindow()
      var reference = Reference()
      for step in 0..<150 {
        let counter = Self.randomCounter(&r, after: reference)
        let context: Comment = "seed \(seed) sequence \(sequence) step \(step) counter \(counter)"
        let verdict = window.check(counter)
        guard verdict == reference.check(counter) else {
          Issue.record("check disagrees: \(verdict) vs \(reference.check(counter)), \(context)")
          return
        }
        let opens = r.next() % 5 != 0
        let before = window
        if opens {
          let recorded = window.accept(counter)
          #expect(recorded == (verdict == .fresh), context)
          if verdict == .fresh { reference.accept(counter) } else { #expect(window == before) }
        }
        for _ in 0..<4 {
          let probe = (reference.highest ?? 0) &- r.next() % (ReplayWindow.width + 4)
          #expect(window.check(probe) == reference.check(probe), context)
        }
      }
      #expect(Self.agree(window, reference), "seed \(seed) sequence \(sequence)")
    }
  }

  static func agree(_ window: ReplayWindow, _ reference: Reference) -> Bool {
    guard let highest = reference.highest else { return window.isEmpty }
    let low = highest >= ReplayWindow.width + 2 ? highest - ReplayWindow.width - 2 : 0
    let high = highest == .max ? highest : highest + 1
    return window.highest == highest
      && (low...high).allSatisfy { window.check($0) == reference.check($0) }
  }
}
