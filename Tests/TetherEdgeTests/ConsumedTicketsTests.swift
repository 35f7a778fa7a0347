// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherEdge

/// The consumed tickets (docs/PROTOCOL.md §12.6, CONFIRM step 4): each accepted once,
/// remembered until its ticket expires, never forgotten early, bounded.
struct ConsumedTicketsTests {
  static func id(_ serial: UInt32) -> SessionID { SessionID(epoch: 1, serial: serial) }
  static func at(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

  @Test func aTicket_isConsumedOnce_andRememberedUntilItExpires() {
    var consumed = ConsumedTickets(capacity: 4)
    #expect(consumed.consume(Self.id(1), expiresAtMs: 3_000, now: .zero) == .consumed)
    #expect(
      consumed.consume(Self.id(1), expiresAtMs: 3_000, now: Self.at(2_999)) == .alreadyConsumed)
    #expect(consumed.contains(Self.id(1), now: Self.at(2_999)))
    #expect(!consumed.contains(Self.id(1), now: Self.at(3_000)))
    #expect(!consumed.contains(Self.id(2), now: .zero))
    consumed.forgetExpired(now: Self.at(3_000))
    #expect(consumed.count == 0)
  }

  /// Full: new ids are refused while every held one is unexpired; none is forgotten to make
  /// room (that would make its ticket's CONFIRM good again). Room comes back as they expire.
  @Test func whenFull_newIdsAreRefused_neverOldOnesForgotten() {
    var consumed = ConsumedTickets(capacity: 2)
    #expect(consumed.consume(Self.id(1), expiresAtMs: 1_000, now: .zero) == .consumed)
    #expect(consumed.consume(Self.id(2), expiresAtMs: 2_000, now: .zero) == .consumed)
    #expect(consumed.consume(Self.id(3), expiresAtMs: 3_000, now: Self.at(999)) == .full)
    #expect(consumed.contains(Self.id(1), now: Self.at(999)))
    #expect(consumed.contains(Self.id(2), now: Self.at(999)))
    // A replay of a held one is still recognised when full.
    #expect(consumed.consume(Self.id(2), expiresAtMs: 2_000, now: Self.at(999)) == .alreadyConsumed)
    #expect(consumed.consume(Self.id(3), expiresAtMs: 3_000, now: Self.at(1_000)) == .consumed)
    #expect(consumed.count == 2 && !consumed.contains(Self.id(1), now: Self.at(1_000)))
  }

  /// Confirmed out of the order of their expiries: each is forgotten at its own expiry.
  @Test func outOfOrderExpiries_areEachForgottenAtTheirOwn() {
    var consumed = ConsumedTickets(capacity: 8)
    for (serial, expiry) in [(1, 3_000), (2, 1_000), (3, 2_000), (4, 500)] as [(UInt32, UInt64)] {
      _ = consumed.consume(Self.id(serial), expiresAtMs: expiry, now: .zero)
    }
    consumed.forgetExpired(now: Self.at(1_500))
    #expect(consumed.count == 2)
    #expect(consumed.contains(Self.id(1), now: Self.at(1_500)))
    #expect(consumed.contains(Self.id(3), now: Self.at(1_500)))
  }

  /// Against a plain model (a dictionary swept at each step), over a seeded random run.
  @Test func aRandomRun_agreesWithAPlainModel() {
    var consumed = ConsumedTickets(capacity: 50)
    var model: [SessionID: UInt64] = [:]
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next(_ bound: UInt64) -> UInt64 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return (state >> 33) % bound
    }
    var nowMs: UInt64 = 0
    for _ in 0..<5_000 {
      nowMs += next(40)
      let id = Self.id(UInt32(next(400)) + 1)
      let expiry = nowMs + 1 + next(3_000)
      model = model.filter { $0.value > nowMs }
      let expected: ConsumedTickets.Outcome =
        model[id] != nil ? .alreadyConsumed : (model.count >= 50 ? .full : .consumed)
      if expected == .consumed { model[id] = expiry }
      #expect(consumed.consume(id, expiresAtMs: expiry, now: Self.at(nowMs)) == expected)
      #expect(consumed.count == model.count)
    }
  }

  @Test func aCapacityBelowOne_isOne() {
    #expect(ConsumedTickets(capacity: 0).capacity == 1)
  }
}
