// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherLab

/// The tap's search agrees with the plain definition of "appears in": at every offset,
/// at the edges, for a needle longer than the datagram and for an empty one.
@Suite struct PassiveTapTests {
  /// The definition, spelled out: some offset where every byte matches.
  static func appears(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    return (0...(haystack.count - needle.count)).contains { start in
      needle.indices.allSatisfy { haystack[start + $0] == needle[$0] }
    }
  }

  @Test func edges() {
    let datagram: [UInt8] = [1, 2, 3, 2, 3, 4]
    #expect(PassiveTap.contains(datagram, [1, 2]))
    #expect(PassiveTap.contains(datagram, [3, 4]))
    #expect(PassiveTap.contains(datagram, [2, 3, 4]))
    #expect(PassiveTap.contains(datagram, datagram))
    #expect(!PassiveTap.contains(datagram, [4, 5]))
    #expect(!PassiveTap.contains(datagram, datagram + [0]))
    #expect(!PassiveTap.contains(datagram, []))
    #expect(!PassiveTap.contains([], [1]))
  }

  @Test func agreesWithTheDefinition() {
    var random = SystemRandomNumberGenerator()
    for _ in 0..<2000 {
      // A small alphabet, so partial matches and repeats are common.
      let haystack = (0..<Int.random(in: 0...40, using: &random)).map { _ in
        UInt8.random(in: 0...3, using: &random)
      }
      let needle = (0..<Int.random(in: 0...5, using: &random)).map { _ in
        UInt8.random(in: 0...3, using: &random)
      }
      #expect(
        PassiveTap.contains(haystack, needle) == Self.appears(needle, in: haystack),
        "\(needle) in \(haystack)")
    }
  }
}
