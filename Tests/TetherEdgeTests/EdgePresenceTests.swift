// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Presence relay, driven by real client sessions: who joined, who left, who went silent.
struct EdgePresenceTests {
  static let first: UInt32 = 1_000_000
  static let second: UInt32 = 1_000_001

  static func twoMembers() throws -> World {
    var world = World()
    world.addClient()
    world.addClient()
    try world.join(0)
    world.run(for: .ms(300))
    try world.join(1)
    return world
  }

  @Test func secondJoin_eachSeesTheOtherJoined() throws {
    let world = try Self.twoMembers()
    #expect(world.clients[1].notifications.contains(.userJoined(uid: Self.first, elapsedMs: 0)))
    #expect(world.clients[0].notifications.contains(.userJoined(uid: Self.second, elapsedMs: 300)))
    // The newcomer's snapshot names the first member, JOINED, with its silence.
    #expect(
      world.presenceEntries(to: 1).first
        == PresenceEntry(uid: Self.first, kind: .joined, silentForMs: 300))
    #expect(
      world.presenceEntries(to: 0) == [
        PresenceEntry(uid: Self.second, kind: .joined, silentForMs: 0)
      ])
  }

  @Test func firstJoin_aloneInTheChannel_getsNoPresence() throws {
    var world = World()
    world.addClient()
    try world.join(0)
    world.run(for: .seconds(3))
    #expect(world.presenceEntries(to: 0).isEmpty)
  }

  @Test func everyPresenceInterval_eachMemberGetsTheAgesOfAll() throws {
    var world = try Self.twoMembers()
    world.run(for: .seconds(3))  // past the digests that call a new member JOINED
    world.serverSent.removeAll()
    world.run(for: .seconds(3))
    let digests = world.messages(to: 1).filter { if case .presence = $0 { true } else { false } }
    #expect(digests.count == 3)
    let alive = world.presenceEntries(to: 1).filter { $0.kind == .alive }
    #expect(Set(alive.map(\.uid)) == [Self.first, Self.second])
    #expect(alive.allSatisfy { $0.silentForMs <= 1000 })  // a beat is due every second
  }

  @Test func leave_theOtherSeesQuit() throws {
    var world = try Self.twoMembers()
    world.run(for: .seconds(2))
    world.leave(0)
    #expect(world.clients[1].notifications.last == .userOffline(uid: Self.first, reason: .quit))
    #expect(world.server.sessionCount == 1)
    #expect(
      world.presenceEntries(to: 1).last
        == PresenceEntry(uid: Self.first, kind: .left, silentForMs: 0))
  }

  @Test func silence_theOtherReportsDroppedAt20s_andTheServerForgetsAt30s() throws {
    var world = try Self.twoMembers()
    world.run(for: .seconds(2))
    world.linkUp[0] = false
    // The server last heard the first client's heartbeat just before the cut.
    let lastHeard = world.serverSent.last {
      $0.to == World.address(0)
        && $0.packet.map { p in
          if case .heartbeatAck = p.message { true } else { false }
        } ?? false
    }?.at
    let heard = try #require(lastHeard)
    world.run(for: .seconds(40))
    let watcher = world.clients[1]
    let dropped = try #require(watcher.time(of: .userOffline(uid: Self.first, reason: .dropped)))
    #expect(dropped >= heard + .seconds(20))
    #expect(dropped <= heard + .seconds(20) + .ms(1))
    let interrupted = try #require(watcher.time(of: .remoteMemberInterrupted(uid: Self.first)))
    #expect(interrupted <= heard + .seconds(4) + .ms(1))
    // Forgotten silently: no LEFT was ever sent.
    #expect(world.server.sessionCount == 1)
    #expect(!world.presenceEntries(to: 1).contains { $0.kind == .left })
    #expect(world.clients[1].stateChanges.count == 2)
  }

  /// The time of the last heartbeat ack the server sent to client `i`.
  private static func lastAck(in world: World, to i: Int) -> Instant? {
    world.serverSent.last {
      $0.to == World.address(i)
        && $0.packet.map { p in
          if case .heartbeatAck = p.message { true } else { false }
        } ?? false
    }?.at
  }

  @Test func uplinkOnlyOutage_deviceInterruptedAt4s_thoughPresenceKeepsArriving() throws {
    var world = try Self.twoMembers()
    world.run(for: .seconds(2))
    world.uplinkUp[0] = false
    let heard = try #require(Self.lastAck(in: world, to: 0))
    world.run(for: .seconds(25))
    let device = world.clients[0]
    // Presence went on arriving for the whole outage (the server forgets at 30 s) ...
    #expect(
      world.serverSent.contains {
        $0.to == World.address(0) && $0.at > heard + .seconds(10)
          && $0.packet.map { p in if case .presence = p.message { true } else { false } } ?? false
      })
    // ... but only a round trip proves the link: INTERRUPTED 4 s after the last ack, LOST
    // at 10 s, as the peers drop the device at 20 s.
    let interrupted = try #require(
      device.time(of: .connectionStateChanged(.reconnecting, .interrupted)))
    #expect(interrupted == heard + .seconds(4))
    #expect(device.time(of: .connectionLost) == heard + .seconds(10))
    let dropped = try #require(
      world.clients[1].time(of: .userOffline(uid: Self.first, reason: .dropped)))
    #expect(dropped > interrupted)
    // Healed: the device rejoins and the peer sees it again.
    world.uplinkUp[0] = true
    world.run(for: .seconds(10))
    #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .rejoinSuccess))
  }

  /// The device hears nothing, the edge still hears it: its heartbeats keep it present for
  /// the peers until it goes INTERRUPTED (4 s); then it makes new handshakes, and an INIT
  /// proves nothing (anyone can replay one: docs/RELIABILITY.md, "downlink blackhole"), so
  /// the peers see it DROPPED after their own silence limit counted from there, never before.
  @Test func downlinkOnlyOutage_deviceInterruptedAt4s_andThePeersKeepItWhileItsBeatsCome()
    throws
  {
    var world = try Self.twoMembers()
    world.run(for: .seconds(2))
    world.downlinkUp[0] = false
    let heard = try #require(Self.lastAck(in: world, to: 0))
    world.run(for: .seconds(25))
    let device = world.clients[0]
    let interrupted = try #require(
      device.time(of: .connectionStateChanged(.reconnecting, .interrupted)))
    #expect(interrupted == heard + .seconds(4))
    #expect(device.time(of: .connectionLost) == heard + .seconds(10))
    // Its heartbeats reached the edge until it went INTERRUPTED: the peer saw it no silence
    // before then, so no DROPPED within 20 s of it.
    let peer = world.clients[1]
    #expect(
      peer.time(of: .remoteMemberInterrupted(uid: Self.first)).map { $0 >= interrupted } != false)
    if let dropped = peer.time(of: .userOffline(uid: Self.first, reason: .dropped)) {
      #expect(dropped >= interrupted + .seconds(15))
    }
    world.downlinkUp[0] = true
    world.run(for: .seconds(10))
    #expect(world.clients[0].lastState == .connectionStateChanged(.connected, .rejoinSuccess))
  }

  @Test func forget_isAtForgetAfter_onThePresenceGrid() throws {
    var world = World()
    world.addClient()
    try world.join(0)
    world.linkUp[0] = false
    world.run(for: .ms(29_999))
    #expect(world.server.sessionCount == 1)
    world.run(for: .ms(2))
    #expect(world.server.sessionCount == 0)
    #expect(world.server.nextDeadline == nil)
  }

  /// A newcomer to a channel of 139 gets the snapshot in as many DATA datagrams as it takes,
  /// each at most 1,200 bytes; each of the others one JOINED entry; and every member the
  /// next digest, likewise split.
  @Test func snapshot_ofALargeChannel_isChunked() throws {
    var bench = SecureBench()
    let members = PresenceDigest.maximumEntries + 9
    var devices: [SecureDevice] = []
    for i in 0..<members {
      var device = bench.device(
        .channel(Fixture.channel, uid: UInt32(i + 1)), host: UInt8(i % 250 + 1),
        port: 40_000 + UInt16(i))
      bench.handshake(&device, SecureBench.channelRequest(uid: UInt32(i + 1)))
      devices.append(device)
    }
    #expect(bench.server.sessionCount == 0)
    // The last one's CONFIRM: its ACCEPT and snapshot, and the others' JOINED entries.
    for i in 0..<(members - 1) { _ = bench.confirm(&devices[i]) }
    let mark = bench.sent.count
    let newcomer = bench.confirm(&devices[members - 1])
    #expect(bench.server.sessionCount == members)
    let last = Array(bench.sent[mark...])
    #expect(last.allSatisfy { $0.bytes.count <= Packet.maximumSize })
    #expect(newcomer.first?.type == 0x81)
    let digests = newcomer.dropFirst().compactMap { view -> PresenceDigest? in
      if case .presence(let d)? = view.message { d } else { nil }
    }
    #expect(digests.count == newcomer.count - 1)
    #expect(digests.flatMap { $0.map(\.uid) }.sorted() == Array(1...UInt32(members - 1)))
    #expect(digests.allSatisfy { $0.count <= EdgePayload.presenceEntries })
    // Each of the others gets one JOINED entry for the newcomer.
    #expect(last.filter { $0.address != devices[members - 1].address }.count == members - 1)
    let relay = bench.advance(by: .seconds(1))
    #expect(relay.allSatisfy { $0.bytes.count <= Packet.maximumSize })
    var entries = 0
    for datagram in relay where datagram.address == devices[0].address {
      if case .presence(let d)? = devices[0].open(datagram.bytes).map(EdgePayloadView.init)?
        .message
      {
        entries += d.count
      }
    }
    #expect(entries == members)
    #expect(relay.count >= members * 2)
  }
}
