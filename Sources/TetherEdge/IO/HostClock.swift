import Glibc
import TetherCore

/// The host's clocks, read once per loop turn and handed to the sans-IO server.
enum HostClock {
  /// `CLOCK_MONOTONIC`, in nanoseconds.
  static func monotonic() -> Instant {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Instant(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
  }

  /// Unix seconds (`time()`); 0 if the clock reads before 1970.
  static func wall() -> UInt64 {
    let now = time(nil)
    return now > 0 ? UInt64(now) : 0
  }
}
