// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Version 1 is removed (docs/PROTOCOL.md §12.14): a version 1 datagram gets nothing back,
/// and the log says why, at most once per ``interval`` per edge, with how many were dropped
/// since its last line (a device left on version 1 sends one every second or so; a line for
/// each would flood the log, one per 10 s still names the problem).
struct VersionOneDrops {
  /// At most one log line per this much of the edge's monotonic clock.
  static var interval: Interval { .seconds(10) }

  /// When the last line was logged (nil: never).
  private var loggedAt: Instant?
  /// Dropped since the last line, not yet logged.
  private var unlogged: UInt64 = 0

  /// Whether `datagram` is a version 1 client datagram: magic "TH", version 1.
  static func isVersionOne(_ datagram: ArraySlice<UInt8>) -> Bool {
    datagram.starts(with: [0x54, 0x48, 0x01])
  }

  /// A version 1 datagram was dropped at `now`. Returns the count to log (this one and the
  /// ones dropped since the last line) when a line is due; nil within ``interval`` of it.
  mutating func drop(at now: Instant) -> UInt64? {
    unlogged &+= 1
    if let loggedAt, now.since(loggedAt) < Self.interval { return nil }
    loggedAt = now
    defer { unlogged = 0 }
    return unlogged
  }
}
