// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A point on the monotonic clock, in seconds: what the bus's threads wait against. (Not
/// Foundation's Date: Foundation would add some 40 MB to tether-edge, which links nothing
/// but the C library family and libnats.)
struct BusTime: Comparable {
  var seconds: Double

  static let distantPast = BusTime(seconds: -.infinity)

  static func now() -> BusTime {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return BusTime(seconds: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
  }

  /// `seconds` from now.
  static func after(_ seconds: Double) -> BusTime { BusTime(seconds: now().seconds + seconds) }

  static func < (a: BusTime, b: BusTime) -> Bool { a.seconds < b.seconds }
}

/// A mutex and a condition variable on the monotonic clock (a wall clock step never makes a
/// wait short or long), for the bus's shared state (``BusCore``).
final class BusCondition: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  func lock() { pthread_mutex_lock(mutex) }
  func unlock() { pthread_mutex_unlock(mutex) }
  func broadcast() { pthread_cond_broadcast(condition) }

  /// Waits, the lock held, until `deadline` or a broadcast (or a spurious wake-up: callers
  /// check their condition again).
  func wait(until deadline: BusTime) {
    guard deadline.seconds.isFinite else {
      if deadline.seconds > 0 { pthread_cond_wait(condition, mutex) }
      return
    }
    let whole = deadline.seconds.rounded(.down)
    var time = timespec(
      tv_sec: Int(whole), tv_nsec: Int(min(999_999_999, (deadline.seconds - whole) * 1e9)))
    _ = pthread_cond_timedwait(condition, mutex, &time)
  }
}
