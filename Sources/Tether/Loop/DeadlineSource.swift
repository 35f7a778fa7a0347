// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The one timer behind every deadline of a loop's engines.
///
/// Normally a timerfd on CLOCK_MONOTONIC, armed for an absolute instant and watched by an
/// `ev_io` at the loop's highest priority: the kernel wakes the loop when the instant
/// passes, with nanosecond resolution and no timer slack, and within one loop iteration
/// the deadline callback runs before any other watcher. Where no timerfd can be had (a
/// kernel without it, a seccomp filter, no descriptor left), one `ev_timer` does the job,
/// with libev's millisecond rounding; the loop's engines say so in `on_log` and in their
/// stats.
///
/// It is armed only when the loop-wide earliest deadline changes.
struct DeadlineSource {
  enum Kind: UInt32 {
    case timerfd = 1
    case evTimer = 2
  }

  private enum Backend {
    case timerfd(WatchedDescriptor)
    case evTimer(UnsafeMutablePointer<ev_timer>)
  }

  private let backend: Backend
  /// Why there is no timerfd (errno), when the backend is the ev_timer.
  let timerfdErrno: Int32
  /// The instant the timer is armed for; nil when disarmed or spent.
  private(set) var armedAt: Instant?
  /// The timerfd expired and was not armed since: it stays readable until it is armed
  /// (or disarmed) again, which also clears it, so it is never read.
  private var spent = false

  /// Starts the source on `loop`; its watcher's data is `context` (a ``LoopContext``).
  init(loop: OpaquePointer, context: UnsafeMutableRawPointer) {
    if let fd = System.makeTimer() {
      backend = .timerfd(
        WatchedDescriptor(
          fd: fd, loop: loop, context: context, priority: tether_ev_max_priority(),
          callback: deadlineSourceReadable))
      timerfdErrno = 0
    } else {
      timerfdErrno = System.errno
      let timer = UnsafeMutablePointer<ev_timer>.allocate(capacity: 1)
      timer.initialize(to: ev_timer())
      tether_ev_timer_init(timer, deadlineSourceTimerFired, 0, 0)
      tether_ev_set_data_timer(timer, context)
      backend = .evTimer(timer)
    }
  }

  var kind: Kind {
    switch backend {
    case .timerfd: .timerfd
    case .evTimer: .evTimer
    }
  }

  /// Keeps the timer at `earliest` (nil: nothing to wait for). Does nothing when it is
  /// already armed there, which is what happens for almost every packet.
  mutating func arm(at earliest: Instant?, loop: OpaquePointer) {
    guard earliest != armedAt || spent else { return }
    spent = false
    switch backend {
    case .timerfd(let timer):
      if !System.armTimer(timer.fd, at: earliest) {
        // Cannot happen with a valid descriptor and instant; wake at once rather than never.
        _ = System.armTimer(timer.fd, at: Instant(nanoseconds: 1))
      }
    case .evTimer(let timer):
      ev_timer_stop(loop, timer)
      if let earliest {
        let now = System.monotonicNow()
        let delay = earliest > now ? Double(earliest.since(now).nanoseconds) / 1e9 : 0
        tether_ev_timer_set(timer, delay, 0)
        ev_timer_start(loop, timer)
      }
    }
    armedAt = earliest
  }

  /// The timer went off: it is spent until armed again (timerfd_settime resets its
  /// expiry count, so the timerfd needs no read).
  mutating func expired() {
    armedAt = nil
    if case .timerfd = backend { spent = true }
  }

  /// Stops the watcher and closes the descriptor.
  func stop(loop: OpaquePointer) {
    switch backend {
    case .timerfd(let timer):
      timer.close(loop: loop)
    case .evTimer(let timer):
      ev_timer_stop(loop, timer)
      timer.deinitialize(count: 1)
      timer.deallocate()
    }
  }
}

private func deadlineSourceReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io else { return }
  LoopContext.enter(tether_ev_data_io(io)) { $0.deadlinesDue() }
}

private func deadlineSourceTimerFired(
  _ loop: OpaquePointer?, _ timer: UnsafeMutablePointer<ev_timer>?, _ events: Int32
) {
  guard let timer else { return }
  LoopContext.enter(tether_ev_data_timer(timer)) { $0.deadlinesDue() }
}
