// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherCore

/// The byte sets of the validated names are constants in the library; they must be the
/// sets their rules spell.
@Suite struct ASCIISetTests {
  static func members(_ set: ASCIISet) -> [UInt8] { (0...255).filter { set.contains($0) } }

  @Test func visible_isPrintableASCIIWithoutSpace() {
    #expect(Self.members(.visible) == Self.members(ASCIISet(range: 0x21...0x7E)))
    #expect(Self.members(.visible) == Array(0x21...0x7E))
  }

  @Test func channelNameBytes_areTheSetSPECSpells() {
    #expect(Self.members(ChannelName.allowed) == Self.members(ASCIISet(ChannelName.spelled)))
    #expect(Self.members(ChannelName.allowed).count == 89)
  }
}
