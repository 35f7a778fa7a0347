// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// `.ms(250)`, `.s(10)`: instants and intervals as the tests and scenarios write them.
extension Instant {
  public static func ms(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }
  public static func s(_ s: UInt64) -> Instant { .ms(s * 1000) }
}

extension Interval {
  public static func ms(_ ms: UInt64) -> Interval { .milliseconds(ms) }
}
