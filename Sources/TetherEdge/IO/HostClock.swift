// SPDX-License-Identifier: Apache-2.0
import CTetherClock
import Glibc
import TetherCore

/// The host's clocks, read once per loop turn and handed to the sans-IO server.
enum HostClock {
  /// `CLOCK_MONOTONIC`, in nanoseconds: CTetherClock's reader, the driver's own.
  static func monotonic() -> Instant { Instant(nanoseconds: tether_sys_monotonic_ns()) }

  /// Unix seconds (`time()`); 0 if the clock reads before 1970.
  static func wall() -> UInt64 {
    let now = time(nil)
    return now > 0 ? UInt64(now) : 0
  }
}
