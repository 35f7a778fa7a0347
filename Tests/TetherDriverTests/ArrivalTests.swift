// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import Tether

/// A datagram's time: the kernel's arrival stamp moved to the monotonic clock, or the time
/// it was read when the stamp is missing or cannot be right.
@Suite struct ArrivalTests {
  /// Realtime runs 1,000 s ahead of monotonic in these tests.
  static let offset: Int64 = 1_000_000_000_000
  static let now = Instant(nanoseconds: 50_000_000_000)

  static func stamp(_ monotonic: UInt64) -> UInt64 { monotonic + UInt64(offset) }

  @Test func aStamp_isMovedToTheMonotonicClock() {
    let arrived = Self.now.nanoseconds - 3_000_000
    let at = System.arrival(realtimeStamp: Self.stamp(arrived), offset: Self.offset, now: Self.now)
    #expect(at == Instant(nanoseconds: arrived))
  }

  @Test func noStamp_meansNow() {
    #expect(System.arrival(realtimeStamp: 0, offset: Self.offset, now: Self.now) == Self.now)
  }

  @Test func aStampAfterNow_orMoreThanASecondOld_meansNow_theClockWasStepped() {
    let future = Self.stamp(Self.now.nanoseconds + 1)
    let old = Self.stamp(Self.now.nanoseconds - 1_000_000_001)
    #expect(System.arrival(realtimeStamp: future, offset: Self.offset, now: Self.now) == Self.now)
    #expect(System.arrival(realtimeStamp: old, offset: Self.offset, now: Self.now) == Self.now)
  }

  @Test func stampsThatCannotBeMonotonic_meanNow() {
    #expect(System.arrival(realtimeStamp: 5, offset: Self.offset, now: Self.now) == Self.now)
    #expect(System.arrival(realtimeStamp: .max, offset: -Self.offset, now: Self.now) == Self.now)
    #expect(System.arrival(realtimeStamp: 1, offset: .min, now: Self.now) == Self.now)
  }
}

/// The kernel's random numbers, eight per system call.
@Suite struct BufferedRandomTests {
  @Test func values_differ_acrossRefills() {
    var random = BufferedRandom()
    let values = (0..<64).map { _ in random.next() }
    #expect(Set(values).count == 64)
  }
}
