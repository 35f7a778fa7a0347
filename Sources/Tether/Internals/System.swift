import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// Every system call the driver makes goes through CTetherSystem's prefixed shims, named
/// here once (the Embedded build has no Glibc module). The C tests inject failures at this
/// seam by defining the libc function in the test program (timerfd_create: the fallback to
/// ev_timer).
enum System {
  /// CLOCK_MONOTONIC now: it does not advance while the device is suspended.
  static func monotonicNow() -> Instant { Instant(nanoseconds: tether_sys_monotonic_ns()) }

  static var errno: Int32 { tether_sys_errno() }

  static func currentThread() -> UInt { tether_sys_thread() }

  static func isCurrentThread(_ thread: UInt) -> Bool { tether_sys_is_thread(thread) != 0 }

  static func closeDescriptor(_ fd: Int32) { tether_sys_close(fd) }

  /// A CLOCK_MONOTONIC timerfd, or nil (errno set).
  static func makeTimer() -> Int32? {
    let fd = tether_sys_timerfd()
    return fd >= 0 ? fd : nil
  }

  /// Arms `fd` for the absolute instant `at` (nil: disarms); false (errno set) on failure.
  static func armTimer(_ fd: Int32, at: Instant?) -> Bool {
    // 0 would disarm: a deadline at the clock's very start is due anyway, so 1 ns will do.
    let nanoseconds = at.map { max($0.nanoseconds, 1) } ?? 0
    return tether_sys_timerfd_arm(fd, nanoseconds) == 0
  }

  static func drainTimer(_ fd: Int32) { tether_sys_timerfd_drain(fd) }
}
