// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

@testable import TetherEdge

/// Cookies under load (docs/PROTOCOL.md §12.6): made from `R` and the address, `mac2`
/// verified under the current or previous `R`, `R` replaced every 120 s.
struct CookieJarTests {
  static let device = IPEndpoint(ipv4: [192, 0, 2, 1], port: 7000)!
  /// An INIT's first 453 bytes, any pattern.
  static let covered = (0..<453).map { UInt8(truncatingIfNeeded: $0 * 7) }

  static func at(_ seconds: UInt64) -> Instant { Instant(nanoseconds: seconds * 1_000_000_000) }

  /// Computed with Python's hashlib: `blake2b(ip16 + port2, digest_size=16, key=bytes(range(32)),
  /// salt=bytes(16), person=b"tether2 cookie" + bytes(2))`, then the same keyed with the
  /// cookie over `covered`, person "tether2 mac2".
  @Test func cookieAndMac2_matchHashlib() {
    let crypto = SodiumCrypto()
    let cookie = CookieJar.cookie(crypto, secret: Array(0..<32), source: Self.device)
    #expect(CertificateKeyTests.hex(cookie) == "b27076425206a4bddadb6a2aa3732547")
    let mac2 = CookieJar.mac2(crypto, cookie: cookie, covering: Self.covered[...])
    #expect(CertificateKeyTests.hex(mac2) == "2c2c847ab2865343af0ebb595510e354")
  }

  @Test func aMac2UnderTheCookieOfItsSource_verifies_andNothingElse() {
    let crypto = SeededCrypto(seed: 9)
    var jar = CookieJar(crypto: crypto, now: .zero)
    let cookie = jar.cookie(for: Self.device, now: .zero)
    // The jar's R is the stream's first 32 bytes.
    let r = SeededCrypto(seed: 9).randomBytes(count: 32)
    #expect(cookie == CookieJar.cookie(crypto, secret: r, source: Self.device))
    let mac2 = CookieJar.mac2(crypto, cookie: cookie, covering: Self.covered[...])
    func verifies(
      _ mac2: ArraySlice<UInt8>, _ covered: ArraySlice<UInt8> = Self.covered[...],
      from source: IPEndpoint = Self.device
    ) -> Bool {
      jar.verifies(mac2: mac2, covering: covered, from: source, now: .zero)
    }
    #expect(verifies(mac2[...]))
    #expect(!verifies(mac2[...], from: IPEndpoint(ipv4: [192, 0, 2, 1], port: 7001)!))
    var altered = Self.covered
    altered[100] ^= 1
    #expect(!verifies(mac2[...], altered[...]))
    #expect(!verifies([UInt8](repeating: 0, count: 16)[...]))
    #expect(!verifies(mac2.dropLast()))
    #expect(!verifies(mac2[...], Self.covered.dropLast()))
  }

  /// A cookie made at 0 s works through the next period (as the previous R) and no longer
  /// in the one after; each replacement draws one new R.
  @Test func r_isReplacedEvery120s_thePreviousKeptOneMorePeriod() {
    let crypto = SeededCrypto(seed: 9)
    var jar = CookieJar(crypto: crypto, now: .zero)
    let first = jar.cookie(for: Self.device, now: .zero)
    let mac2 = CookieJar.mac2(crypto, cookie: first, covering: Self.covered[...])
    func verifies(at seconds: UInt64) -> Bool {
      jar.verifies(
        mac2: mac2[...], covering: Self.covered[...], from: Self.device, now: Self.at(seconds))
    }
    #expect(verifies(at: 119) && crypto.drawn == 32)
    #expect(verifies(at: 120) && crypto.drawn == 64)
    #expect(jar.cookie(for: Self.device, now: Self.at(120)) != first)
    #expect(verifies(at: 239))
    #expect(!verifies(at: 240) && crypto.drawn == 96)
  }

  /// After two periods or more without a call, both secrets are past their time: one new R
  /// is drawn and the old cookies fail.
  @Test func afterALongSilence_oldCookiesFail_andOneRIsDrawn() {
    let crypto = SeededCrypto(seed: 9)
    var jar = CookieJar(crypto: crypto, now: .zero)
    let mac2 = CookieJar.mac2(
      crypto, cookie: jar.cookie(for: Self.device, now: .zero), covering: Self.covered[...])
    let verified = jar.verifies(
      mac2: mac2[...], covering: Self.covered[...], from: Self.device, now: Self.at(1_000))
    #expect(!verified && crypto.drawn == 64)
    // The grid stays on whole periods from the start: the next replacement is at 1,080 s.
    let now = jar.cookie(for: Self.device, now: Self.at(1_079))
    #expect(jar.cookie(for: Self.device, now: Self.at(1_080)) != now)
  }
}
