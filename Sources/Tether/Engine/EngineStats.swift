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
