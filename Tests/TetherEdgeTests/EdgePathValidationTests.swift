// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherEdge

/// ``PathValidation`` alone (docs/PROTOCOL.md §12.11): which datagram makes a candidate,
/// what its budget lets out, and what validates it.
struct EdgePathValidationTests {
  static let b = SecureBench.address(2)
  static let c = SecureBench.address(3)

  static func equal(_ x: ArraySlice<UInt8>, _ y: ArraySlice<UInt8>) -> Bool { x.elementsEqual(y) }

  /// Draws 8 bytes counting up from `next`, so each challenge differs.
  final class Draws {
    var next: UInt8 = 1
    func draw() -> [UInt8] {
      defer { next &+= 1 }
      return [UInt8](repeating: next, count: 8)
    }
  }

  @Test func onlyANewestDatagram_makesACandidate_andTheSameAddressKeepsItsChallenge() {
    var path = PathValidation()
    let draws = Draws()
    let late = path.heard(42, from: Self.b, newest: false, draw: draws.draw)
    #expect(late == nil)
    #expect(path.candidate == nil)
    let first = path.heard(42, from: Self.b, newest: true, draw: draws.draw)
    #expect(first == [UInt8](repeating: 1, count: 8))
    // Again from B: the same challenge; a late one from B adds bytes and sends nothing.
    let again = path.heard(42, from: Self.b, newest: true, draw: draws.draw)
    #expect(again == first)
    let lateFromB = path.heard(50, from: Self.b, newest: false, draw: draws.draw)
    #expect(lateFromB == nil)
    #expect(path.candidate?.budget.received == 134)
    // A newest one from C replaces B, with a new challenge.
    let fromC = path.heard(42, from: Self.c, newest: true, draw: draws.draw)
    #expect(fromC != first)
    #expect(path.candidate?.address == Self.c && path.candidate?.budget.received == 42)
  }

  /// Bytes out to the candidate never pass bytes in: a second challenge waits for a
  /// second datagram.
  @Test func theBudget_boundsWhatGoesToTheCandidate() {
    var path = PathValidation()
    let noCandidate = path.spend(42)
    #expect(!noCandidate)  // no candidate: nothing may go
    _ = path.heard(42, from: Self.b, newest: true, draw: Draws().draw)
    let firstFits = path.spend(42)
    #expect(firstFits)
    let oneMore = path.spend(1)
    #expect(!oneMore)
    _ = path.heard(42, from: Self.b, newest: true, draw: Draws().draw)
    let tooMuch = path.spend(43)
    let secondFits = path.spend(42)
    #expect(!tooMuch && secondFits)
  }

  /// A draw that is not 8 bytes (a broken source) makes no candidate and drops the old one.
  @Test func aShortDraw_makesNoCandidate() {
    var path = PathValidation()
    _ = path.heard(42, from: Self.b, newest: true, draw: Draws().draw)
    let short = path.heard(42, from: Self.c, newest: true, draw: { [1, 2, 3] })
    #expect(short == nil)
    #expect(path.candidate == nil)
  }

  /// Only the exact echo, from the candidate itself, validates; then the candidate is done.
  /// A newest datagram from the session's address drops it.
  @Test func validation_needsTheExactEcho_fromTheCandidate() throws {
    var path = PathValidation()
    let drawn = path.heard(42, from: Self.b, newest: true, draw: Draws().draw)
    let challenge = try #require(drawn)
    var wrong = challenge
    wrong[7] ^= 0x80
    let wrongEcho = path.validate(wrong[...], from: Self.b, equal: Self.equal)
    #expect(wrongEcho == nil)
    let fromElsewhere = path.validate(challenge[...], from: Self.c, equal: Self.equal)
    #expect(fromElsewhere == nil)
    let truncated = path.validate(challenge.dropLast(), from: Self.b, equal: Self.equal)
    #expect(truncated == nil)
    let moved = path.validate(challenge[...], from: Self.b, equal: Self.equal)
    #expect(moved == Self.b)
    #expect(path.candidate == nil)
    let twice = path.validate(challenge[...], from: Self.b, equal: Self.equal)
    #expect(twice == nil)

    _ = path.heard(42, from: Self.b, newest: true, draw: Draws().draw)
    path.heardAtSession(newest: false)
    #expect(path.candidate != nil)
    path.heardAtSession(newest: true)
    #expect(path.candidate == nil)
  }
}
