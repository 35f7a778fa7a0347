import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// Every system call the driver makes goes through CTetherSystem's prefixed shims, named
/// here once (so a test could swap them, and the Embedded build needs no Glibc module).
enum System {
  /// CLOCK_MONOTONIC now: it does not advance while the device is suspended.
  static func monotonicNow() -> Instant { Instant(nanoseconds: tether_sys_monotonic_ns()) }

  static var errno: Int32 { tether_sys_errno() }

  static func currentThread() -> UInt { tether_sys_thread() }

  static func isCurrentThread(_ thread: UInt) -> Bool { tether_sys_is_thread(thread) != 0 }

  static func closeDescriptor(_ fd: Int32) { tether_sys_close(fd) }
}
