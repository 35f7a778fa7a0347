// SPDX-License-Identifier: Apache-2.0
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// Deadlines that fired and how late (fired minus due): a connection's own, or its loop's.
struct DeadlineStats {
  var fired: UInt64 = 0
  var lateness = LatencyHistogram()

  mutating func record(due: Instant, firedAt now: Instant) {
    fired &+= 1
    lateness.record(now.since(due))
  }
}

/// What a connection counts beside its session's counters.
struct ConnectionCounters {
  /// Its deadlines that ran, counted always.
  var deadlinesFired: UInt64 = 0
  /// How late they ran (1.1 KB, allocated at create); nil when the host asked for none
  /// (`own_lateness_off`), so such a connection carries a pointer, not the histogram.
  /// Freed by ``release()`` (the connection's deinit).
  let lateness: UnsafeMutablePointer<LatencyHistogram>?
  var datagramsIn: UInt64 = 0
  var datagramsOut: UInt64 = 0
  var sendFailures: UInt64 = 0

  init(ownLateness: Bool) {
    guard ownLateness else {
      lateness = nil
      return
    }
    let histogram = UnsafeMutablePointer<LatencyHistogram>.allocate(capacity: 1)
    histogram.initialize(to: LatencyHistogram())
    lateness = histogram
  }

  /// One of the connection's deadlines ran at `now`, due at `due`.
  mutating func recordDeadline(due: Instant, firedAt now: Instant) {
    deadlinesFired &+= 1
    lateness?.pointee.record(now.since(due))
  }

  /// Frees the histogram (a plain value: nothing to deinitialize).
  func release() { lateness?.deallocate() }
}

extension Connection {
  /// The figures of `tether_engine_get_stats` and `tether_rtm_client_get_stats`, with the
  /// session's own counters. (In Connection, not per profile: both functions are one.)
  var publicStats: tether_connection_stats {
    let (malformed, foreign, attempts) = profile.counters
    let (unopened, replayed, dropped) = profile.secureCounters
    var out = tether_connection_stats()
    out.size = UInt32(MemoryLayout<tether_connection_stats>.size)
    out.deadline_source = context.sourceKind.rawValue
    out.deadlines_fired = stats.deadlinesFired
    if let own = stats.lateness {  // else 0, as tether.h says
      out.lateness_p50_us = microseconds(of: &own.pointee, permille: 500)
      out.lateness_p99_us = microseconds(of: &own.pointee, permille: 990)
      out.lateness_max_us = microseconds(of: &own.pointee, permille: nil)
    }
    out.loop_engines = UInt32(clamping: context.connectionCount)
    out.loop_deadlines_fired = context.deadlines.fired
    out.loop_lateness_p50_us = context.latenessMicroseconds(permille: 500)
    out.loop_lateness_p99_us = context.latenessMicroseconds(permille: 990)
    out.loop_lateness_p999_us = context.latenessMicroseconds(permille: 999)
    out.loop_lateness_max_us = context.latenessMicroseconds(permille: nil)
    out.datagrams_in = stats.datagramsIn
    out.datagrams_out = stats.datagramsOut
    out.datagrams_malformed = malformed &+ dropped
    out.datagrams_foreign = foreign
    out.join_attempts = attempts
    out.send_failures = stats.sendFailures
    out.datagrams_unopened = unopened
    out.datagrams_replayed = replayed
    out.loop_datagrams_overflowed = context.overflowed
    out.loop_datagrams_unclaimed = context.unclaimed
    return out
  }
}

extension LoopContext {
  /// The loop's lateness at `permille` (nil: the maximum), as ``microseconds(of:permille:)``.
  func latenessMicroseconds(permille: UInt32?) -> UInt32 {
    microseconds(of: &deadlines.lateness, permille: permille)
  }
}

/// The lateness at `permille` (nil: the maximum) in whole microseconds, rounded up (a
/// lateness is never understated), clamped to UInt32. The histogram (1 KB) is read in
/// place, not copied.
@inline(never)  // one copy for the seven figures
func microseconds(of lateness: inout LatencyHistogram, permille: UInt32?) -> UInt32 {
  let interval =
    permille.map { lateness.percentile(permille: $0) } ?? Interval(nanoseconds: lateness.maximum)
  let (quotient, remainder) = interval.nanoseconds.quotientAndRemainder(dividingBy: 1000)
  return UInt32(clamping: quotient + (remainder == 0 ? 0 : 1))
}
