// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// How many JOINs the server takes from one source address (docs/PROTOCOL.md, "Join rate
/// limit"): a token bucket per source of ``burst`` JOINs that refills one JOIN every
/// ``refill``, kept for at most ``maxSources`` sources at once. LOGINs take from the same
/// bucket (a limited LOGIN gets LOGIN_REFUSE 2 REJECTED).
///
/// The defaults are generous on purpose: a JOIN reaches a live server about once per
/// device and rejoin (the client's backoff only repeats JOINs the server does not answer),
/// so 1,024 at once and 250 a second more from one address is a thousand devices behind
/// one NAT rejoining together. What it stops is one address asking for token checks (an
/// HMAC each) without end.
public struct JoinLimit: Equatable, Sendable {
  /// JOINs one source may send at once, after a quiet spell. At least 1.
  public var burst: Int
  /// One more JOIN is allowed per this interval (4 ms × the time scale: 250 a second).
  public var refill: Interval
  /// At most this many sources are tracked; past it the idle ones are forgotten, then the
  /// least recently seen half. A forgotten source starts again with a full bucket.
  public var maxSources: Int

  public init(burst: Int = 1024, refill: Interval = .milliseconds(4), maxSources: Int = 4096) {
    self.burst = max(burst, 1)
    self.refill = Interval(nanoseconds: max(refill.nanoseconds, 1))
    self.maxSources = max(maxSources, 1)
  }
}

/// The token buckets of ``JoinLimit``, by source host (the address without its port).
struct JoinLimiter {
  private struct Bucket {
    /// JOINs still allowed at `stamp`.
    var available: Int
    /// When `available` was last brought up to date.
    var stamp: Instant
  }

  let limit: JoinLimit
  private var buckets: [PeerAddress: Bucket] = [:]

  init(limit: JoinLimit) { self.limit = limit }

  /// How many sources are tracked now.
  var sourceCount: Int { buckets.count }

  /// Takes one JOIN from `address` at `now`; false when its bucket is empty.
  mutating func take(from address: PeerAddress, now: Instant) -> Bool {
    let key = address.host
    guard var bucket = buckets[key] else {
      if buckets.count >= limit.maxSources { prune(now: now) }
      buckets[key] = Bucket(available: limit.burst - 1, stamp: now)
      return true
    }
    refill(&bucket, now: now)
    let allowed = bucket.available > 0
    if allowed { bucket.available -= 1 }
    buckets[key] = bucket
    return allowed
  }

  private func refill(_ bucket: inout Bucket, now: Instant) {
    let gained = now.since(bucket.stamp).nanoseconds / limit.refill.nanoseconds
    guard gained > 0 else { return }
    if gained >= UInt64(limit.burst - bucket.available) {
      bucket.available = limit.burst
      bucket.stamp = now
    } else {
      bucket.available += Int(gained)
      bucket.stamp = bucket.stamp + Interval(nanoseconds: gained * limit.refill.nanoseconds)
    }
  }

  /// Forgets every source whose bucket is full again (it is the same as a new one), then,
  /// while more than half the table is left, all but the `maxSources / 2` most recently
  /// seen. So it runs at most once per `maxSources / 2` new sources.
  private mutating func prune(now: Instant) {
    let full = Interval(nanoseconds: limit.refill.nanoseconds &* UInt64(limit.burst))
    buckets = buckets.filter { now.since($0.value.stamp) < full }
    guard buckets.count > limit.maxSources / 2 else { return }
    let keep = limit.maxSources / 2
    let newest = buckets.sorted { $0.value.stamp > $1.value.stamp }.prefix(keep)
    buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
  }
}

extension PeerAddress {
  /// The address without its port (and an IPv6 flow label): a `sockaddr_in` or
  /// `sockaddr_in6` (Linux family numbers 2 and 10) with those bytes zeroed; any other
  /// address as it is. Devices behind one NAT share it.
  var host: PeerAddress {
    var bytes = self.bytes
    guard bytes.count >= 2 else { return self }
    let family = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
    switch (family, bytes.count) {
    case (2, 16): bytes[2...3] = [0, 0]
    case (10, 28): bytes[2...7] = [0, 0, 0, 0, 0, 0]
    default: return self
    }
    return PeerAddress(bytes: bytes) ?? self
  }
}
