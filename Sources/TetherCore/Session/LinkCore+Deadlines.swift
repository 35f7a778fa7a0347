// SPDX-License-Identifier: Apache-2.0
/// Everything a session waits for; on a tie the earlier case fires first. `giveUp` is the
/// effort's end (the channel's give-up, the first login's timeout), `own` the profile's
/// own deadline while live (the channel's member verdicts). A login session has no
/// will-expire warning, no connection-lost and no deadline of its own.
@_spi(Link) public enum LinkDeadline: CaseIterable, Sendable {
  case tokenWillExpire, tokenExpiry, giveUp, lost, interrupted, retry, heartbeat, own

  /// Every case, in order, read in place (iterating `allCases` retains its array).
  static let all: [LinkDeadline] = [
    .tokenWillExpire, .tokenExpiry, .giveUp, .lost, .interrupted, .retry, .heartbeat, .own,
  ]
}

extension LinkCore {
  /// When `kind` falls due, or nil if it does not apply now, with `own` the profile's own
  /// deadline. Derived from the recorded times each time it is asked: nothing is stored
  /// per deadline, so a packet that proves the round trip moves no timer.
  func dueTime(of kind: LinkDeadline, own: Instant?) -> Instant? {
    switch (kind, phase) {
    case (.tokenWillExpire, .attempting), (.tokenWillExpire, .live):
      guard !tokenWarned, let before = timing.tokenWarningBefore, let expiry = tokenExpiresAt
      else { return nil }
      return expiry - before
    case (.tokenExpiry, .attempting):
      return tokenExpiryReported ? nil : tokenExpiresAt
    case (.tokenExpiry, .live):
      return tokenExpiryReported || !timing.tokenExpiresWhileLive ? nil : tokenExpiresAt
    case (.giveUp, .attempting(let effort)):
      return effort.endsAt
    case (.lost, .attempting(let effort)):
      return effort.lostAt
    case (.interrupted, .live):
      return lastData + timing.interruptedAfter
    case (.retry, .attempting(let effort)):
      return effort.nextAttemptAt
    case (.heartbeat, .live(let next)):
      return next
    case (.own, .live):
      return own
    default:
      return nil
    }
  }

  /// The deadline that falls due first (the earlier case on a tie), and `latest`, when the
  /// driver must have called at the latest: the earliest due time, the heartbeat's with its
  /// slack. One pass serves both the deadlines to run and the wake-up window.
  @inline(never)  // both profiles, and advance and the window in each: one copy
  func earliestDue(own: Instant?) -> (kind: LinkDeadline, at: Instant, latest: Instant)? {
    var best: (kind: LinkDeadline, at: Instant, latest: Instant)?
    for kind in LinkDeadline.all {
      guard let at = dueTime(of: kind, own: own) else { continue }
      // Two deadlines have slack, so that many sessions on one loop share wake-ups instead
      // of one each: the heartbeat, 1/16 of its interval (62.5 ms at 1 s), and a join
      // attempt, 1/8 of the retry base (62.5 ms at 500 ms), whose instant is a random
      // draw anyway. Everything the app sees is exact: interrupted, lost, give-up, the
      // token's deadlines and the members' verdicts never fire early or late by design.
      let slack: UInt64 =
        switch kind {
        case .heartbeat: timing.heartbeatInterval.nanoseconds / 16
        case .retry: timing.retry.base.nanoseconds / 8
        default: 0
        }
      let latest = at + Interval(nanoseconds: slack)
      var next = best ?? (kind, at, latest)
      if at < next.at { (next.kind, next.at) = (kind, at) }
      next.latest = min(next.latest, latest)
      best = next
    }
    return best
  }

  /// ``earliestDue(own:)`` asked of the link where it is held: from a mutating caller, a
  /// plain call copies the link (208 bytes) to the stack first, at each event.
  @inline(__always)
  mutating func earliestDueInPlace(own: Instant?) -> (
    kind: LinkDeadline, at: Instant, latest: Instant
  )? {
    earliestDue(own: own)
  }

  /// When the driver must next call the session: not before the window's start and by its
  /// end (see ``DeadlineWindow``); nil when nothing is scheduled.
  func window(own: Instant?) -> DeadlineWindow? {
    guard let due = earliestDue(own: own) else { return nil }
    var window = DeadlineWindow(start: due.at)
    window.end = due.latest
    return window
  }
}
