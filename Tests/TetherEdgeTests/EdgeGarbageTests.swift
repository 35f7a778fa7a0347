// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// Whatever arrives, the server never traps, and drops and counts what it cannot use.
struct EdgeGarbageTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")
  static let peer = Bench.address(9)

  /// An edge with one channel member, and that member's valid client datagrams: an INIT, a
  /// CONFIRM, and DATA of a HEARTBEAT, a LEAVE and a RENEW_TOKEN (none of them sent).
  static func validDatagrams() -> (bench: Bench, device: SecureDevice, datagrams: [[UInt8]]) {
    var bench = Bench()
    var device = bench.device(.channel(lobby, uid: 5))
    bench.connect(&device, Bench.channelRequest(uid: 5))
    var other = bench.device(.channel(lobby, uid: 6), host: 2)
    let initiation = other.initiate(Bench.channelRequest(uid: 6))
    let renewal = try! TokenV2(
      text: Array(bench.token(.channel(lobby, uid: 5)).utf8)[...], crypto: SodiumCrypto())
    let datagrams = [
      initiation, device.confirm!.bytes, device.seal(DevicePayloads.heartbeat(1)),
      device.seal(DevicePayloads.leave), device.seal(DevicePayloads.renew(renewal)),
    ]
    return (bench, device, datagrams)
  }

  @Test func randomBytes_areDroppedAndCounted() {
    var server = EdgeServer(config: World.config(), crypto: SimCrypto(seed: 1))
    var random = SeededRandom(seed: 7)
    let count = 5000
    for _ in 0..<count {
      let length = Int(random.next() % 1400)
      var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if !bytes.isEmpty { bytes[0] = 0x55 }  // never a kind or a magic: every one malformed
      #expect(server.receive(bytes[...], from: Self.peer, now: .zero, wallClock: 0).isEmpty)
    }
    #expect(server.counters.malformed == UInt64(count))
    #expect(server.sessionCount == 0)
  }

  @Test func everyTruncation_ofEveryClientDatagram_isDroppedAndCounted() {
    var (bench, device, datagrams) = Self.validDatagrams()
    var expected: UInt64 = 0
    let before = bench.server.counters
    for datagram in datagrams {
      for length in 0..<datagram.count {
        #expect(bench.send(Array(datagram.prefix(length)), from: device.address).isEmpty)
        expected += 1
      }
    }
    // Cut short, an INIT or a CONFIRM is malformed (each has one size); a DATA datagram
    // under 42 bytes is malformed, a longer one does not open.
    let c = bench.server.counters
    #expect(c.malformed - before.malformed + c.unopened - before.unopened == expected)
    #expect(bench.server.sessionCount == 1)
    _ = device
  }

  @Test func randomTails_afterAVersion2Kind_neverTrap() {
    var server = EdgeServer(config: World.config(), crypto: SimCrypto(seed: 1))
    var random = SeededRandom(seed: 11)
    for _ in 0..<5000 {
      var bytes: [UInt8] = [UInt8(1 + random.next() % 8)]
      let length = Int(random.next() % 80) + 8
      bytes += (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      _ = server.receive(
        bytes[...], from: Self.peer, now: .ms(random.next() % 100_000), wallClock: random.next())
      _ = server.tick(now: .ms(random.next() % 100_000), wallClock: random.next())
    }
    // No INIT or CONFIRM has these sizes; a DATA datagram names a session not held.
    let c = server.counters
    #expect(c.malformed + c.unknownSession + c.unexpected == 5000)
    #expect(server.sessionCount == 0)
  }

  @Test func mutatedValidDatagrams_neverTrap() throws {
    var (bench, device, datagrams) = Self.validDatagrams()
    var random = SeededRandom(seed: 13)
    let all =
      datagrams + [
        AdminKick(channel: Fixture.channel, uid: 1, banSeconds: 1, unixTime: 0, nonce: 1)
          .sealed(appID: Fixture.appID, certificate: World.certificate)
      ]
    for _ in 0..<2000 {
      var bytes = all[Int(random.next() % UInt64(all.count))]
      for _ in 0..<(1 + random.next() % 3) {
        // Never the byte it was: every datagram sent is altered.
        bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(1 + random.next() % 255)
      }
      bench.now = bench.now + .ms(random.next() % 10)
      _ = bench.send(bytes, from: random.next() % 2 == 0 ? device.address : Self.peer)
    }
    // Nothing altered opens: the member stays, and the two maps still agree.
    #expect(bench.server.members(of: Self.lobby) == [5])
    let members = bench.server.table.channels.channels.values.reduce(0) { $0 + $1.count }
    #expect(members == bench.server.sessionCount)
    for (id, session) in bench.server.table.records {
      let member = try #require(session.member)
      #expect(bench.server.table.channels.members(of: member.channel)[member.uid] == id)
    }
    _ = device
  }

  @Test func oversizedDatagram_isDroppedAndCounted() {
    var (bench, device, datagrams) = Self.validDatagrams()
    let before = bench.server.counters.malformed
    let bytes = datagrams[2] + [UInt8](repeating: 0, count: 2000)
    #expect(bench.send(bytes, from: device.address).isEmpty)
    #expect(bench.server.counters.malformed == before + 1)
    _ = device
  }

  @Test func edgeToDeviceKinds_areDroppedAndCountedAsUnexpected() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 5))
    let response = bench.send(
      device.initiate(Bench.channelRequest(uid: 5)), from: device.address)
    // A real RESPONSE, then each other kind the edge sends, at its size (§12.2).
    let kinds: [[UInt8]] = [
      try #require(response.first).bytes, [0x05] + [UInt8](repeating: 0, count: 17),
      [0x04] + [UInt8](repeating: 0, count: 72), [0x06] + [UInt8](repeating: 0, count: 58),
      [0x08] + [UInt8](repeating: 0, count: 24),
    ]
    #expect(kinds.map { $0.first } == [0x02, 0x05, 0x04, 0x06, 0x08])
    let before = bench.server.counters.unexpected
    for bytes in kinds {
      #expect(bench.send(bytes, from: Self.peer).isEmpty)
    }
    #expect(bench.server.counters.unexpected == before + UInt64(kinds.count))
  }

  /// DATA of a session this edge does not hold (a HEARTBEAT, a RENEW_TOKEN, a LEAVE: the
  /// edge restarted) is answered with that session's RESET, which its device takes, and
  /// which is smaller than the datagram (25 bytes, answering at least 42).
  @Test func dataOfAnUnknownSession_getsItsReset() throws {
    var (bench, device, datagrams) = Self.validDatagrams()
    bench.server = EdgeServer(config: bench.config)  // a restart: another epoch
    for datagram in datagrams[2...] {
      let out = bench.send(datagram, from: device.address)
      #expect(out.count == 1)
      #expect(out.first.map { $0.bytes.count < datagram.count } == true)
      #expect(out.first.map { device.acceptsReset($0.bytes) } == true)
    }
    #expect(bench.server.counters.unknownSession == 3)
    #expect(bench.server.counters.resets == 3)
  }

  @Test func heartbeat_ofAHeldSession_isAcked_withTheSequence() {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 5))
    let joinedAt = bench.now
    bench.connect(&device, Bench.channelRequest(uid: 5))
    bench.now = joinedAt + .ms(1500)
    let out = bench.data(&device, DevicePayloads.heartbeat(41))
    #expect(
      out.map(\.message) == [
        .heartbeatAck(sequence: 41, serverTimeMs: (joinedAt + .ms(1500)).nanoseconds / 1_000_000)
      ])
  }

  @Test func time_runningBackwards_isTakenAsTheLatest() {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 5))
    let latest = bench.now + .seconds(100)
    bench.now = latest
    bench.connect(&device, Bench.channelRequest(uid: 5))
    bench.now = Instant(nanoseconds: 1_000_000_000)
    let out = bench.data(&device, DevicePayloads.heartbeat(1))
    #expect(
      out.map(\.message) == [
        .heartbeatAck(sequence: 1, serverTimeMs: latest.nanoseconds / 1_000_000)
      ])
  }
}
