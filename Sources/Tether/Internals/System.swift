// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
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

  /// When a datagram arrived, on the monotonic clock: the kernel's stamp (`realtimeStamp`,
  /// 0 if none) moved to the monotonic clock with `offset` (``realtimeOffset()``, taken when
  /// it was read, at `now`). Without a stamp, or one that is not within the second before
  /// `now` (the realtime clock was stepped in between), the datagram arrived `now`.
  static func arrival(realtimeStamp: UInt64, offset: Int64, now: Instant) -> Instant {
    guard realtimeStamp != 0, realtimeStamp <= UInt64(Int64.max) else { return now }
    let (monotonic, overflow) = Int64(realtimeStamp).subtractingReportingOverflow(offset)
    guard !overflow, monotonic > 0 else { return now }
    let at = Instant(nanoseconds: UInt64(monotonic))
    return at <= now && now.since(at) < .seconds(1) ? at : now
  }

  static func realtimeOffset() -> Int64 { tether_sys_realtime_offset() }

  /// The wall clock at the monotonic instant `at`, in unix seconds (0 before 1970: a board
  /// whose clock was never set reads as early, never as unknown).
  static func unixSeconds(at: Instant) -> UInt64 {
    let (nanoseconds, overflow) = Int64(clamping: at.nanoseconds).addingReportingOverflow(
      realtimeOffset())
    return overflow || nanoseconds < 0 ? 0 : UInt64(nanoseconds) / 1_000_000_000
  }

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
}
