// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherEdge

/// Session ids (docs/PROTOCOL.md §12.8) and who may get a RESET for one (§12.9).
struct SessionIDIssuerTests {
  static let lifetime = Interval.seconds(3)

  static func at(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

  // MARK: - Issuing

  @Test func epoch_isFourRandomBytes_andSerialsCountFromOne() {
    let issuer = SessionIDIssuer(
      crypto: SeededCrypto(seed: 1, scripted: [0xDE, 0xAD, 0xBE, 0xEF]),
      ticketLifetime: Self.lifetime)
    var copy = issuer
    #expect(issuer.epoch == 0xDEAD_BEEF)
    #expect(copy.issue(now: .zero) == SessionID(epoch: 0xDEAD_BEEF, serial: 1))
    #expect(copy.issue(now: .zero) == SessionID(epoch: 0xDEAD_BEEF, serial: 2))
    #expect(copy.issue(now: Self.at(5_000))?.serial == 3)
  }

  @Test func aZeroEpoch_isDrawnAgain() {
    let crypto = SeededCrypto(seed: 1, scripted: [0, 0, 0, 0, 0, 0, 0, 9])
    #expect(SessionIDIssuer(crypto: crypto, ticketLifetime: Self.lifetime).epoch == 9)
  }

  @Test func wireBytes_areEpochThenSerial_bigEndian() {
    let id = SessionID(epoch: 0x0A0B_0C0D, serial: 7)
    #expect(id.bytes == [0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 7])
    #expect(SessionID(bytes: id.bytes[...]) == id)
    #expect(SessionID(bytes: id.bytes.dropLast()) == nil)
  }

  /// At the end of an epoch's serials a new epoch begins at serial 1, never the same epoch.
  @Test func theLastSerial_startsANewEpoch() {
    let crypto = SeededCrypto(seed: 1, scripted: [0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 6])
    var issuer = SessionIDIssuer(
      crypto: crypto, ticketLifetime: Self.lifetime,
      lastSerial: SessionIDIssuer<SeededCrypto>.finalSerial - 1)
    #expect(issuer.issue(now: .zero) == SessionID(epoch: 5, serial: UInt32.max - 1))
    // The next draw repeats the epoch (5): drawn again, 6.
    #expect(issuer.issue(now: .zero) == SessionID(epoch: 6, serial: 1))
    // The old epoch's ids are another epoch's now: RESET at once (their tickets are dead).
    #expect(issuer.mayReset(SessionID(epoch: 5, serial: 3), now: .zero))
  }

  // MARK: - May this id get a RESET?

  @Test func anotherEpoch_mayBeReset() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 2), ticketLifetime: Self.lifetime)
    let id = try issuer.issued(now: .zero)
    #expect(issuer.mayReset(SessionID(epoch: id.epoch &+ 1, serial: 1), now: .zero))
  }

  /// Epoch 0 is drawn again by every edge: an id of it names no session anywhere (an id of
  /// all zeros is what a forger would try first), so it never draws a RESET.
  @Test func epochZero_isNeverReset() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 2), ticketLifetime: Self.lifetime)
    let id = try issuer.issued(now: .zero)
    #expect(id.epoch != 0)
    #expect(!issuer.mayReset(SessionID(epoch: 0, serial: 0), now: Self.at(1_000_000)))
    #expect(!issuer.mayReset(SessionID(epoch: 0, serial: 1), now: Self.at(1_000_000)))
    #expect(issuer.mayReset(SessionID(epoch: id.epoch &+ 1, serial: 1), now: .zero))
  }

  @Test func aSerialNotYetIssued_orZero_isNeverReset() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 2), ticketLifetime: Self.lifetime)
    let id = try issuer.issued(now: .zero)
    let late = Self.at(1_000_000)
    #expect(!issuer.mayReset(SessionID(epoch: id.epoch, serial: 2), now: late))
    #expect(!issuer.mayReset(SessionID(epoch: id.epoch, serial: 0), now: late))
    #expect(issuer.mayReset(id, now: late))
  }

  /// A serial issued within the last ticket lifetime may still be confirmed: no RESET until
  /// the lifetime has passed since it was issued.
  @Test func aSerialIssuedWithinTheLifetime_isNotReset_thenIs() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 2), ticketLifetime: Self.lifetime)
    let id = try issuer.issued(now: Self.at(500))
    #expect(!issuer.mayReset(id, now: Self.at(500)))
    #expect(!issuer.mayReset(id, now: Self.at(3_500)))
    #expect(issuer.mayReset(id, now: Self.at(3_501)))
  }

  /// Serials issued over several seconds: the marks of each second tell old from recent,
  /// erring (by less than a second) towards recent; the last issue time is exact.
  @Test func marksPerSecond_tellOldSerialsFromRecentOnes() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 3), ticketLifetime: Self.lifetime)
    let s1 = try issuer.issued(now: Self.at(500))
    let s2 = try issuer.issued(now: Self.at(2_200))
    let s3 = try issuer.issued(now: Self.at(2_900))
    // At 4.0 s the cutoff is 1.0 s: s1 (0.5 s) is old, as the mark of second 1 says.
    #expect(issuer.mayReset(s1, now: Self.at(4_000)))
    #expect(!issuer.mayReset(s2, now: Self.at(4_000)))
    // At 5.5 s the cutoff is 2.5 s: s2 (2.2 s) is old, but the marks know only that it was
    // issued before second 3: recent, by less than a second.
    #expect(!issuer.mayReset(s2, now: Self.at(5_500)))
    // At 5.95 s the cutoff is 2.95 s, past the last issue (2.9 s): all are old.
    #expect(issuer.mayReset(s2, now: Self.at(5_950)) && issuer.mayReset(s3, now: Self.at(5_950)))
    let s4 = try issuer.issued(now: Self.at(6_000))
    // Now a mark of second 3 says s3 is old; s4 is recent until 9.0 s have passed.
    #expect(issuer.mayReset(s3, now: Self.at(6_000)))
    #expect(!issuer.mayReset(s4, now: Self.at(6_000)))
    #expect(!issuer.mayReset(s4, now: Self.at(9_000)))
    #expect(issuer.mayReset(s4, now: Self.at(9_001)))
  }

  /// Before a whole lifetime has passed since the clock's start, nothing is old.
  @Test func beforeOneLifetime_nothingIsReset() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 4), ticketLifetime: Self.lifetime)
    let id = try issuer.issued(now: .zero)
    #expect(!issuer.mayReset(id, now: Self.at(2_999)))
    #expect(!issuer.mayReset(id, now: Self.at(3_000)))
  }

  /// A steady stream of ids for a long time: every answer is what the issue times say
  /// (old by more than lifetime + 1 s: yes; within the lifetime: no), with the marks pruned.
  @Test func aLongRun_answersByIssueTime() throws {
    var issuer = SessionIDIssuer(crypto: SeededCrypto(seed: 5), ticketLifetime: Self.lifetime)
    var issued: [(SessionID, UInt64)] = []
    for step: UInt64 in 0..<2_000 {
      let ms = step * 37
      issued.append((try issuer.issued(now: Self.at(ms)), ms))
      for (id, at) in issued.suffix(200) {
        let age = ms - at
        if age <= 3_000 { #expect(!issuer.mayReset(id, now: Self.at(ms))) }
        if age > 4_000 { #expect(issuer.mayReset(id, now: Self.at(ms))) }
      }
    }
  }
}

extension SessionIDIssuer {
  /// The next id, which the test requires to be issued.
  mutating func issued(now: Instant) throws -> SessionID {
    let id = issue(now: now)
    return try #require(id)
  }
}
