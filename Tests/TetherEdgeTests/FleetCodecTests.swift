// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherEdge

/// What goes on the bus: keys in the characters NATS allows, one spelling each, and records
/// and messages that parse back as they were written and refuse anything else.
struct FleetCodecTests {
  static func channel(_ text: String) throws -> ChannelName {
    try ChannelName(validating: Array(text.utf8))
  }

  @Test func keys_spellEveryChannelByteInKeyCharacters_andReadBack() throws {
    let channel = try Self.channel("a b.c>d=e~%")
    let user = try UserID(validating: Array("ann.e*>".utf8))
    for key in [FleetKey.member(channel, uid: 7), .user(user), .loginMember(channel, user)] {
      let text = key.key
      #expect(
        text.utf8.allSatisfy { byte in
          byte == UInt8(ascii: ".") || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || (0x30...0x39).contains(byte)
            || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        })
      #expect(FleetKey(text) == key)
    }
    #expect(FleetKey.member(channel, uid: 7).key == "c.a=20b=2Ec=3Ed=3De=7E=25.7")
  }

  @Test func keys_otherSpellingsAndDamage_areNoKey() {
    for text in [
      "", "c", "c.lobby", "c.lobby.", "c.lobby.07", "c.lobby.4294967296", "c.lob=62y.1",
      "c.lobby.1.2", "x.lobby.1", "u.", "u.a=2", "u.a=zz", "l.team", "cc.lobby.1",
      "c.=41.1", "u.a b",
    ] {
      #expect(FleetKey(text) == nil, "\(text)")
    }
  }

  @Test func records_beaconsAndAdminActions_parseBackAsWritten() throws {
    let owner = FleetOwner(edgeID: Array("edge:1".utf8), incarnation: 0xDEAD_BEEF)
    let record = FleetRecord(owner: owner, joinedAtMs: 1_700_000_000_123, state: .left)
    #expect(FleetRecord(record.bytes) == record)
    let beacon = FleetBeacon(owner: owner, silences: ["c.lobby.7": 1600, "c.x.8": 9000])
    #expect(FleetBeacon(beacon.bytes) == beacon)
    #expect(FleetBeacon(FleetBeacon(owner: owner, silences: [:]).bytes)?.silences == [:])
    let kick = try #require(
      FleetAdmin(origin: owner, target: .member(Self.channel("lobby"), uid: 7), bannedUntil: 99))
    #expect(FleetAdmin(kick.bytes) == kick)
    let user = try UserID(validating: Array("bob".utf8))
    let kickUser = try #require(FleetAdmin(origin: owner, target: .user(user), bannedUntil: 0))
    #expect(FleetAdmin(kickUser.bytes) == kickUser)
  }

  @Test func records_thatDoNotParse_areRefused() {
    for text in [
      "", "tether-fleet", "tether-fleet 2 edge=e inc=0000000000000001 at=1 state=joined",
      "tether-fleet 1 edge=e inc=1 at=1 state=joined",
      "tether-fleet 1 edge=e inc=0000000000000001 at=x state=joined",
      "tether-fleet 1 edge=e inc=0000000000000001 at=1 state=gone",
      "tether-fleet 1 edge=e edge=f inc=0000000000000001 at=1 state=joined",
      "tether-fleet 1 inc=0000000000000001 at=1 state=joined",
      "tether-fleet 1 edge=e inc=0000000000000001 at=99999999999999999999 state=joined",
    ] {
      #expect(FleetRecord(Array(text.utf8)) == nil, "\(text)")
    }
    #expect(
      FleetBeacon(Array("tether-beacon 1 edge=e inc=0000000000000001 silent=a:1,b".utf8)) == nil)
    #expect(FleetAdmin(Array("tether-admin 1 edge=e inc=0000000000000001 until=1".utf8)) == nil)
  }

  @Test func theLaterJoinWins_tiesByOwner() {
    let a = FleetOwner(edgeID: Array("a".utf8), incarnation: 1)
    let b = FleetOwner(edgeID: Array("b".utf8), incarnation: 1)
    let early = FleetRecord(owner: b, joinedAtMs: 10, state: .joined)
    let late = FleetRecord(owner: a, joinedAtMs: 11, state: .joined)
    #expect(late.isLater(than: early) && !early.isLater(than: late))
    let tieA = FleetRecord(owner: a, joinedAtMs: 10, state: .joined)
    #expect(early.isLater(than: tieA) && !tieA.isLater(than: early))
  }
}
