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

  @Test func downlinkOnlyOutage_deviceInterruptedAt4s_andThePeersKeepIt() throws {
    var world = try Self.twoMembers()
    world.run(for: .seconds(2))
    world.downlinkUp[0] = false
    let heard = try #require(Self.lastAck(in: world, to: 0))
    world.run(for: .seconds(25))
    let device = world.clients[0]
    #expect(
      device.time(of: .connectionStateChanged(.reconnecting, .interrupted))
        == heard + .seconds(4))
    #expect(device.time(of: .connectionLost) == heard + .seconds(10))
    // The server still hears the device (its heartbeats, then its rejoins), so the peers
    // keep it: no DROPPED.
    #expect(
      !world.clients[1].notifications.contains(.userOffline(uid: Self.first, reason: .dropped)))
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

  @Test func snapshot_ofALargeChannel_isChunked() throws {
    var server = EdgeServer(config: World.config())
    let max = PresenceDigest.maximumEntries
    let members = max + 9
    var last: [Outgoing] = []
    for i in 0..<members {
      let request = JoinRequest(
        uid: UInt32(i + 1), appID: Fixture.appID, channel: Fixture.channel,
        token: World.token(expiresAt: 0), isRejoin: false)
      let bytes = Packet(cookie: UInt64(i + 1), message: .join(request)).encoded
      last = server.receive(
        bytes[...], from: World.address(i), now: .zero, wallClock: World.wallBase)
    }
    #expect(server.sessionCount == members)
    let toNewcomer = last.filter { $0.address == World.address(members - 1) }
    let digests = toNewcomer.compactMap { out -> PresenceDigest? in
      guard case .presence(let d) = try? Packet.decode(out.bytes[...]).message else { return nil }
      return d
    }
    #expect(digests.map(\.count) == [max, 8])
    #expect(toNewcomer.allSatisfy { $0.bytes.count <= Packet.maximumSize })
    // Each of the others gets one JOINED entry for the newcomer.
    #expect(last.count == 1 + 2 + (members - 1))
    let relay = server.tick(now: .s(1), wallClock: World.wallBase + 1)
    #expect(relay.count == members * 2)
    #expect(relay.allSatisfy { $0.bytes.count <= Packet.maximumSize })
  }
}
