// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The edge's handshake budget (docs/PROTOCOL.md §12.6, INIT step 2): a token bucket of
/// `--handshake-rate` INITs a second, with a burst of the same, taken by every INIT that
/// goes on to public-key work without a valid `mac2`. The edge is **under load** while the
/// bucket is empty: then an INIT without a valid `mac2` gets a COOKIE_REPLY, not X25519
/// work. Why a rate and not a queue: public-key work is what a flood of INITs would buy, and
/// a cookie costs the flood a round trip from a real address.
///
/// Real seconds: `--time-scale` does not change it (the CPU a handshake costs is not
/// scaled). It is ``JoinLimiter``'s bucket with one source, so one bucket's arithmetic
/// serves both.
public struct HandshakeRate {
  /// INITs a second, and the burst.
  public let perSecond: Int
  private var bucket: JoinLimiter

  /// The default of `--handshake-rate`.
  public static let defaultPerSecond = 1000

  public init(perSecond: Int = defaultPerSecond) {
    self.perSecond = max(perSecond, 1)
    let refill = Interval(nanoseconds: max(1_000_000_000 / UInt64(self.perSecond), 1))
    bucket = JoinLimiter(limit: JoinLimit(burst: self.perSecond, refill: refill, maxSources: 1))
  }

  /// What an INIT that passed the size check gets at `now`, given whether its `mac2`
  /// verified (``CookieJar/verifies(mac2:covering:from:now:)``).
  public mutating func admit(mac2Verified: Bool, now: Instant) -> Admission {
    // A valid mac2 proves the address: it costs that address's join budget instead of
    // this bucket, so a flood of unproven INITs cannot starve proven ones.
    if mac2Verified { return .proven }
    return bucket.take(from: PeerAddress(), now: now) ? .admitted : .underLoad
  }

  /// What ``admit(mac2Verified:now:)`` decided.
  public enum Admission: Equatable, Sendable {
    /// A token taken: the INIT goes on to public-key work.
    case admitted
    /// A valid `mac2`: the INIT goes on, charged to its source's join budget (§10.4; an
    /// empty one drops it), and its CONFIRM charges nothing more.
    case proven
    /// The bucket is empty and no valid `mac2`: answer with a COOKIE_REPLY if the token
    /// opens, else nothing. No public-key work.
    case underLoad
  }
}
