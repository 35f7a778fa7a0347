// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Whatever arrives, the server never traps, and drops and counts what it cannot use.
struct EdgeGarbageTests {
  static let peer = World.address(0)

  static func validPackets() -> [[UInt8]] {
    let join = JoinRequest(
      uid: 0, appID: Fixture.appID, channel: Fixture.channel, token: World.token(expiresAt: 0),
      isRejoin: false)
    let messages: [Message] = [
      .join(join), .heartbeat(sequence: 1), .leave, .renewToken(World.token(expiresAt: 0)),
    ]
    return messages.map { Packet(cookie: 5, message: $0).encoded }
  }

  @Test func randomBytes_areDroppedAndCounted() {
    var server = EdgeServer(config: World.config())
    var random = SeededRandom(seed: 7)
    let count = 5000
    for _ in 0..<count {
      let length = Int(random.next() % 1400)
      var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if !bytes.isEmpty { bytes[0] = 0x55 }  // never a magic: every one must be malformed
      #expect(server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0).isEmpty)
    }
    #expect(server.counters.malformed == UInt64(count))
    #expect(server.sessionCount == 0)
  }

  @Test func everyTruncation_ofEveryClientPacket_isDroppedAndCounted() {
    var server = EdgeServer(config: World.config())
    var expected: UInt64 = 0
    for packet in Self.validPackets() {
      for length in 0..<packet.count {
        #expect(
          server.receive(packet.prefix(length), from: Self.peer, now: .zero, wallClock: 0).isEmpty)
        expected += 1
      }
    }
    #expect(server.counters.malformed == expected)
    #expect(server.sessionCount == 0)
  }

  @Test func randomTails_afterAValidHeader_neverTrap() {
    var server = EdgeServer(config: World.config())
    var random = SeededRandom(seed: 11)
    for _ in 0..<5000 {
      var bytes: [UInt8] = [0x54, 0x48, 0x01, UInt8(truncatingIfNeeded: random.next() % 5)]
      let length = Int(random.next() % 80) + 8
      bytes += (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      _ = server.receive(
        bytes[...], from: Self.peer, now: .ms(random.next() % 100_000), wallClock: random.next())
      _ = server.tick(now: .ms(random.next() % 100_000), wallClock: random.next())
    }
    let c = server.counters
    #expect(c.malformed + c.unknownSession + c.refusedJoins > 4000)
  }

  @Test func mutatedValidPackets_neverTrap() throws {
    var server = EdgeServer(config: World.config())
    var random = SeededRandom(seed: 13)
    let packets =
      Self.validPackets() + [
        AdminKick(channel: Fixture.channel, uid: 1, banSeconds: 1, unixTime: 0, nonce: 1)
          .sealed(appID: Fixture.appID, certificate: World.certificate)
      ]
    for _ in 0..<5000 {
      var bytes = packets[Int(random.next() % UInt64(packets.count))]
      for _ in 0..<(1 + random.next() % 3) {
        bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
      }
      _ = server.receive(
        bytes[...], from: Self.peer, now: .ms(random.next() % 10_000), wallClock: 0)
    }
    // Mutated cookies and uids make new sessions; the two maps still agree.
    let members = server.table.channels.channels.values.reduce(0) { $0 + $1.count }
    #expect(members == server.sessionCount)
    for (cookie, session) in server.table.records {
      let member = try #require(session.member)
      #expect(server.table.channels.members(of: member.channel)[member.uid] == cookie)
    }
  }

  @Test func oversizedDatagram_isDroppedAndCounted() {
    var server = EdgeServer(config: World.config())
    var bytes = Self.validPackets()[1]
    bytes += [UInt8](repeating: 0, count: 2000)
    #expect(server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0).isEmpty)
    #expect(server.counters.malformed == 1)
  }

  @Test func serverToClientTypes_areDroppedAndCountedAsUnexpected() throws {
    var server = EdgeServer(config: World.config())
    let digest = try PresenceDigest([PresenceEntry(uid: 1, kind: .alive, silentForMs: 0)])
    let messages: [Message] = [
      .accept(JoinAccept(uid: 1, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false)),
      .refuse(.rejected), .heartbeatAck(sequence: 1, serverTimeMs: 0), .presence(digest),
      .kick(.banned), .tokenExpired, .sessionUnknown,
      .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 0)),
    ]
    for message in messages {
      let bytes = Packet(cookie: 1, message: message).encoded
      #expect(server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0).isEmpty)
    }
    #expect(server.counters.unexpected == UInt64(messages.count))
  }

  @Test func heartbeatOrRenew_fromAnUnknownCookie_getsSessionUnknown_withThatCookie() {
    var server = EdgeServer(config: World.config())
    for message: Message in [.heartbeat(sequence: 3), .renewToken(World.token(expiresAt: 0))] {
      let bytes = Packet(cookie: 0xFEED, message: message).encoded
      let out = server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0)
      #expect(
        out == [
          Outgoing(
            address: Self.peer, bytes: Packet(cookie: 0xFEED, message: .sessionUnknown).encoded)
        ])
    }
    #expect(server.counters.unknownSession == 2)
  }

  @Test func leave_fromAnUnknownCookie_getsNoAnswer() {
    var server = EdgeServer(config: World.config())
    let bytes = Packet(cookie: 0xFEED, message: .leave).encoded
    #expect(server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0).isEmpty)
    #expect(server.counters.unknownSession == 1)
  }

  @Test func heartbeat_fromAKnownCookie_isAcked_withTheSequence() {
    var server = EdgeServer(config: World.config())
    let join = Self.validPackets()[0]
    _ = server.receive(join[...], from: Self.peer, now: .zero, wallClock: World.wallBase)
    let beat = Packet(cookie: 5, message: .heartbeat(sequence: 41)).encoded
    let out = server.receive(beat[...], from: Self.peer, now: .ms(1500), wallClock: World.wallBase)
    let ack = Packet(cookie: 5, message: .heartbeatAck(sequence: 41, serverTimeMs: 1500)).encoded
    #expect(out == [Outgoing(address: Self.peer, bytes: ack)])
  }

  @Test func time_runningBackwards_isTakenAsTheLatest() {
    var server = EdgeServer(config: World.config())
    let join = Self.validPackets()[0]
    _ = server.receive(join[...], from: Self.peer, now: .s(100), wallClock: World.wallBase)
    let beat = Packet(cookie: 5, message: .heartbeat(sequence: 1)).encoded
    let out = server.receive(beat[...], from: Self.peer, now: .s(1), wallClock: World.wallBase)
    let ack = Packet(cookie: 5, message: .heartbeatAck(sequence: 1, serverTimeMs: 100_000)).encoded
    #expect(out.first?.bytes == ack)
  }
}
