// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherEdge

/// The handshake budget (docs/PROTOCOL.md §12.6, INIT step 2): `--handshake-rate` a second
/// and as many at once; empty means under load; a valid `mac2` never takes from it.
struct HandshakeRateTests {
  static func at(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

  @Test func theDefault_admits1000AtOnce_thenOnePerMillisecond() {
    var rate = HandshakeRate()
    #expect(rate.perSecond == 1000)
    for _ in 0..<1000 { #expect(rate.admit(mac2Verified: false, now: .zero) == .admitted) }
    #expect(rate.admit(mac2Verified: false, now: .zero) == .underLoad)
    #expect(rate.admit(mac2Verified: false, now: Self.at(1)) == .admitted)
    #expect(rate.admit(mac2Verified: false, now: Self.at(1)) == .underLoad)
  }

  /// After a quiet spell the bucket is full again, never fuller than the burst.
  @Test func aQuietSpell_refillsToTheBurst_notPastIt() {
    var rate = HandshakeRate(perSecond: 3)
    for _ in 0..<3 { #expect(rate.admit(mac2Verified: false, now: .zero) == .admitted) }
    #expect(rate.admit(mac2Verified: false, now: Self.at(333)) == .underLoad)
    #expect(rate.admit(mac2Verified: false, now: Self.at(334)) == .admitted)
    let later = Self.at(60_000)
    for _ in 0..<3 { #expect(rate.admit(mac2Verified: false, now: later) == .admitted) }
    #expect(rate.admit(mac2Verified: false, now: later) == .underLoad)
  }

  /// A valid mac2 goes on under load, and takes nothing from the bucket.
  @Test func aValidMac2_isProven_underLoadToo_andTakesNoToken() {
    var rate = HandshakeRate(perSecond: 1)
    #expect(rate.admit(mac2Verified: true, now: .zero) == .proven)
    #expect(rate.admit(mac2Verified: false, now: .zero) == .admitted)
    #expect(rate.admit(mac2Verified: false, now: .zero) == .underLoad)
    #expect(rate.admit(mac2Verified: true, now: .zero) == .proven)
  }

  @Test func aRateBelowOne_isOne() {
    #expect(HandshakeRate(perSecond: 0).perSecond == 1)
  }
}
