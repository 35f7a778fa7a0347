import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// Deadlines that fired and how late (fired minus due): an engine's own, or its loop's.
struct DeadlineStats {
  var fired: UInt64 = 0
  var lateness = LatencyHistogram()

  mutating func record(due: Instant, firedAt now: Instant) {
    fired &+= 1
    lateness.record(now.since(due))
  }
}

/// What an engine counts beside its session's counters.
struct EngineStats {
  var deadlines = DeadlineStats()
  var datagramsIn: UInt64 = 0
  var datagramsOut: UInt64 = 0
  var sendFailures: UInt64 = 0
}

extension Connection {
  /// The figures of `tether_engine_get_stats` (and `tether_rtm_client_get_stats`), with
  /// the session's own counters.
  func publicStats(malformed: UInt64, foreign: UInt64, attempts: UInt64) -> tether_engine_stats {
    var out = tether_engine_stats()
    out.size = UInt32(MemoryLayout<tether_engine_stats>.size)
    out.deadline_source = context.sourceKind.rawValue
    out.deadlines_fired = stats.deadlines.fired
    out.lateness_p50_us = microseconds(stats.deadlines.lateness.percentile(permille: 500))
    out.lateness_p99_us = microseconds(stats.deadlines.lateness.percentile(permille: 990))
    out.lateness_max_us = microseconds(Interval(nanoseconds: stats.deadlines.lateness.maximum))
    let loop = context.deadlines
    out.loop_engines = UInt32(clamping: context.engineCount)
    out.loop_deadlines_fired = loop.fired
    out.loop_lateness_p50_us = microseconds(loop.lateness.percentile(permille: 500))
    out.loop_lateness_p99_us = microseconds(loop.lateness.percentile(permille: 990))
    out.loop_lateness_p999_us = microseconds(loop.lateness.percentile(permille: 999))
    out.loop_lateness_max_us = microseconds(Interval(nanoseconds: loop.lateness.maximum))
    out.datagrams_in = stats.datagramsIn
    out.datagrams_out = stats.datagramsOut
    out.datagrams_malformed = malformed
    out.datagrams_foreign = foreign
    out.join_attempts = attempts
    out.send_failures = stats.sendFailures
    return out
  }
}

/// Whole microseconds, rounded up (a lateness is never understated), clamped to UInt32.
private func microseconds(_ interval: Interval) -> UInt32 {
  let (quotient, remainder) = interval.nanoseconds.quotientAndRemainder(dividingBy: 1000)
  return UInt32(clamping: quotient + (remainder == 0 ? 0 : 1))
}
