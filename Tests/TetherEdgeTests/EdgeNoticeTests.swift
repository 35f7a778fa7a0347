// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Terminal notices survive one lost datagram: a KICK or TOKEN_EXPIRED is repeated to the
/// ended session's next datagram, and a LEFT rides on the channel's next digests.
struct EdgeNoticeTests {
  static let first: UInt32 = 1_000_000

  static func isKick(_ packet: Packet?) -> Bool {
    if case .kick = packet?.message { true } else { false }
  }

  /// How many datagrams the network lost of those a test picked.
  final class Losses { var count = 0 }

  /// The network loses the first datagram that `matches` (to the server or not, the
  /// client, the packet), and only that one.
  static func loseOnce(
    in world: inout World, _ matches: @escaping (Bool, Int, Packet?) -> Bool
  ) -> Losses {
    let losses = Losses()
    world.loses = { toServer, client, packet in
      guard losses.count == 0, matches(toServer, client, packet) else { return false }
      losses.count += 1
      return true
    }
    return losses
  }

  static func carriesLeft(_ packet: Packet?) -> Bool {
    guard case .presence(let digest) = packet?.message else { return false }
    return digest.contains { $0.kind == .left }
  }

  /// Which of the datagrams a test loses once were lost.
  final class Lost {
    var kick = false
    var left = false
  }

  @Test func kickLost_isRepeatedToTheNextHeartbeat_failedNotARejoin() throws {
    var world = try EdgeAdminTests.twoMembers()
    // The KICK to the kicked device and the LEFT to the other are both lost once.
    let lost = Lost()
    world.loses = { toServer, i, packet in
      guard !toServer else { return false }
      if i == 0, !lost.kick, Self.isKick(packet) {
        lost.kick = true
        return true
      }
      if i == 1, !lost.left, Self.carriesLeft(packet) {
        lost.left = true
        return true
      }
      return false
    }
    world.admin(EdgeAdminTests.kick(at: world.wallClock))
    #expect(lost.kick && lost.left)
    let kickedAt = world.now
    world.run(for: .seconds(30))
    let device = world.clients[0]
    let failed = try #require(
      device.time(of: .connectionStateChanged(.failed, .bannedByServer)))
    #expect(failed <= kickedAt + .seconds(1) + .ms(1))  // the next heartbeat's answer
    #expect(
      !device.notifications.contains(.connectionStateChanged(.reconnecting, .keepAliveTimeout)))
    #expect(device.stateChanges.last == .connectionStateChanged(.failed, .bannedByServer))
    let other = world.clients[1]
    #expect(other.notifications.contains(.userOffline(uid: Self.first, reason: .quit)))
    #expect(!other.notifications.contains(.userOffline(uid: Self.first, reason: .dropped)))
    #expect(world.server.counters.noticesRepeated >= 1)
  }

  @Test func leftLost_theNextDigestCarriesIt_quitNotDropped() throws {
    var world = try EdgeAdminTests.twoMembers()
    let lost = Self.loseOnce(in: &world) { toServer, client, packet in
      !toServer && client == 1 && Self.carriesLeft(packet)
    }
    world.leave(0)
    let leftAt = world.now
    world.run(for: .seconds(30))
    #expect(lost.count == 1)
    let other = world.clients[1]
    let quit = try #require(other.time(of: .userOffline(uid: Self.first, reason: .quit)))
    #expect(quit <= leftAt + world.server.config.presenceInterval + .ms(1))
    #expect(!other.notifications.contains(.userOffline(uid: Self.first, reason: .dropped)))
    #expect(
      other.notifications.filter { $0 == .userOffline(uid: Self.first, reason: .quit) }.count == 1)
  }

  @Test func leaveLostOnce_theSecondCopyArrives_quitNotDropped() throws {
    var world = try EdgeAdminTests.twoMembers()
    let lost = Self.loseOnce(in: &world) { toServer, client, packet in
      toServer && client == 0 && packet?.message == .leave
    }
    world.leave(0)
    let leftAt = world.now
    world.run(for: .seconds(30))
    #expect(lost.count == 1)
    #expect(world.server.session(cookie: world.clients[0].cookie) == nil)
    let other = world.clients[1]
    let quit = try #require(other.time(of: .userOffline(uid: Self.first, reason: .quit)))
    #expect(quit == leftAt)
    #expect(!other.notifications.contains(.userOffline(uid: Self.first, reason: .dropped)))
  }

  /// A member back under its uid soon after leaving, whose JOINED broadcast a peer lost:
  /// the peer refuses ALIVE for a uid it saw QUIT lately (an overtaken digest), so the
  /// next digests call the member JOINED and it is back at the next one.
  @Test func aMemberBackSoonAfterLeaving_itsJoinedLost_isBackAtTheNextDigest() throws {
    var world = try EdgeAdminTests.twoMembers()
    world.leave(0)
    world.run(for: .ms(300))
    let lost = Self.loseOnce(in: &world) { toServer, client, packet in
      guard !toServer, client == 1, case .presence(let digest) = packet?.message else {
        return false
      }
      return digest.contains { $0.uid == Self.first && $0.kind == .joined }
    }
    try world.join(0, uid: Self.first)
    let backAt = world.now
    world.run(for: .seconds(6))
    #expect(lost.count == 1)
    let other = world.clients[1]
    let back = try #require(
      other.log.last {
        if case .userJoined(Self.first, _) = $0.notification { true } else { false }
      }
    )
    #expect(back.at > backAt)
    #expect(back.at <= backAt + world.server.config.presenceInterval + .ms(1))
  }

  @Test func aMemberBackUnderItsUid_isNotAnnouncedAsLeft() throws {
    var world = try EdgeAdminTests.twoMembers()
    world.leave(0)
    try world.join(0, uid: Self.first)  // back at once under the same uid, a new session
    let backAt = world.now
    world.run(for: .seconds(10))
    let other = world.clients[1]
    let quits = other.log.filter { $0.notification == .userOffline(uid: Self.first, reason: .quit) }
    #expect(quits.count == 1)
    #expect(quits.allSatisfy { $0.at <= backAt })  // no LEFT repeated after it came back
    #expect(world.server.departures.isEmpty)
    #expect(world.server.members(of: Fixture.channel).contains(Self.first))
  }

  @Test func endedSessionsAndDepartures_areForgottenInTime() throws {
    var world = try EdgeAdminTests.twoMembers()
    _ = EdgeAdminTests.send(EdgeAdminTests.kick(at: world.wallClock), in: &world)
    world.leave(1)
    #expect(world.server.ended.count == 1)
    world.run(for: world.server.config.forgetAfter + .seconds(2))
    #expect(world.server.ended.isEmpty)
    #expect(world.server.departures.isEmpty && world.server.departureCount == 0)
    #expect(world.server.nextDeadline == nil)
  }
}
