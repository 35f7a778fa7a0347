import TetherCore

#if canImport(Glibc)
  import Glibc
#endif

/// Every system call the driver makes, in one place (so tests can see what it depends on,
/// and failures can be injected later).
enum System {
  /// CLOCK_MONOTONIC now: it does not advance while the device is suspended.
  static func monotonicNow() -> Instant {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Instant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
  }

  static var errno: Int32 { Glibc.errno }

  static func isOwner(_ thread: pthread_t) -> Bool { pthread_equal(pthread_self(), thread) != 0 }

  static func closeDescriptor(_ fd: Int32) { _ = Glibc.close(fd) }
}
