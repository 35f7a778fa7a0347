// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The cookie secret `R` and the cookies made from it (docs/PROTOCOL.md §12.6, "Under
/// load"; WireGuard's cookie reply). A cookie proves that its holder receives at an
/// address: `PRF16(R, IP address (16) ‖ port (2), "tether2 cookie")`, sent only to that
/// address (sealed in a COOKIE_REPLY). An INIT carries `mac2 = PRF16(cookie, INIT[0 ..<
/// 453], "tether2 mac2")`, which verifies under the current `R` or the previous one.
///
/// `R` is 32 random bytes made at start and replaced every ``period`` (120 s of the
/// monotonic clock, as the device keeps a cookie 120 s); the previous one is kept one more
/// period, so a cookie made just before a replacement still works, and none works for more
/// than two periods. Replacement happens when a call comes with a later `now`, not on a
/// timer: a jar nobody asks has nothing to replace.
public struct CookieJar<Crypto: SessionCrypto> {
  private let crypto: Crypto
  /// How long each `R` makes cookies.
  public let period: Interval
  private var current: [UInt8]
  private var previous: [UInt8]?
  /// When `current` was made (advanced by whole periods).
  private var madeAt: Instant

  static var secretBytes: Int { 32 }
  /// The cookie and `mac2` are 16 bytes.
  public static var cookieBytes: Int { 16 }
  /// The part of an INIT that `mac2` covers: everything before it.
  public static var coveredBytes: Int { 453 }

  /// Draws the first `R` (32 random bytes through `crypto`) at `now`.
  public init(crypto: Crypto, now: Instant, period: Interval = .seconds(120)) {
    self.crypto = crypto
    self.period = Interval(nanoseconds: max(period.nanoseconds, 1))
    current = crypto.randomBytes(count: Self.secretBytes)
    madeAt = now
  }

  /// The cookie of `source` at `now`, under the current `R`.
  public mutating func cookie(for source: IPEndpoint, now: Instant) -> [UInt8] {
    replaceIfDue(now: now)
    return Self.cookie(crypto, secret: current, source: source)
  }

  /// Whether `mac2` is the MAC of `covered` (an INIT's first 453 bytes) under the cookie of
  /// `source` made from the current or the previous `R`. All zeros (no cookie held) never
  /// verifies, as any wrong value.
  public mutating func verifies(
    mac2: ArraySlice<UInt8>, covering covered: ArraySlice<UInt8>, from source: IPEndpoint,
    now: Instant
  ) -> Bool {
    replaceIfDue(now: now)
    guard mac2.count == Self.cookieBytes, covered.count == Self.coveredBytes else { return false }
    for secret in [current, previous] {
      guard let secret else { continue }
      var cookie = Self.cookie(crypto, secret: secret, source: source)
      let expected = Self.mac2(crypto, cookie: cookie, covering: covered)
      crypto.wipe(&cookie)
      if crypto.constantTimeEqual(expected[...], mac2) { return true }
    }
    return false
  }

  /// `mac2` of `covered` under `cookie`: what a device holding the cookie sends.
  public static func mac2(_ crypto: Crypto, cookie: [UInt8], covering covered: ArraySlice<UInt8>)
    -> [UInt8]
  {
    crypto.derive(key: cookie, input: covered, label: "tether2 mac2", length: cookieBytes)
  }

  static func cookie(_ crypto: Crypto, secret: [UInt8], source: IPEndpoint) -> [UInt8] {
    crypto.derive(
      key: secret, input: source.bytes[...], label: "tether2 cookie", length: cookieBytes)
  }

  /// One period on: the current `R` becomes the previous and a new one is drawn. Two or
  /// more: both are replaced (the previous is past its second period), one draw.
  private mutating func replaceIfDue(now: Instant) {
    let periods = now.since(madeAt).nanoseconds / period.nanoseconds
    guard periods > 0 else { return }
    if var old = previous {
      previous = nil  // so `old` holds the only reference and is wiped in place
      crypto.wipe(&old)
    }
    if periods == 1 {
      previous = current
    } else {
      crypto.wipe(&current)
      previous = nil
    }
    current = crypto.randomBytes(count: Self.secretBytes)
    madeAt = madeAt + Interval(nanoseconds: periods &* period.nanoseconds)
  }
}
