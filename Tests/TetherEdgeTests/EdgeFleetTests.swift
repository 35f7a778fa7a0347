// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Edges of one fleet (issue 27): channel members on different edges see each other as on
/// one edge, through a model bus (FleetRig); the same through a real nats-server is
/// EndToEndTests' part.
struct EdgeFleetTests {
  typealias Rig = FleetRig<Harness>
  static let a: UInt32 = 1001
  static let b: UInt32 = 2002

  /// Device 0 of edge 0 joined as `a`, then device 0 of edge 1 as `b`, both in "lobby".
  static func twoEdges() throws -> Rig {
    var rig = Rig(edges: 2)
    rig.worlds[0].addClient()
    rig.worlds[1].addClient()
    try rig.worlds[0].join(0, uid: a)
    rig.run(for: .milliseconds(300))
    try rig.worlds[1].join(0, uid: b)
    rig.run(for: .seconds(2))
    return rig
  }

  static func offline(_ log: [(at: Instant, notification: ChannelNotification)], _ uid: UInt32)
    -> [(at: Instant, reason: UserOfflineReason)]
  {
    log.compactMap {
      if case .userOffline(uid, let reason) = $0.notification { ($0.at, reason) } else { nil }
    }
  }

  static func joined(_ notifications: [ChannelNotification], _ uid: UInt32) -> Int {
    notifications.filter { if case .userJoined(uid, _) = $0 { true } else { false } }.count
  }

  @Test func membersOnTwoEdges_seeEachOtherJoin() throws {
    let rig = try Self.twoEdges()
    #expect(Self.joined(rig.worlds[0].clients[0].notifications, Self.b) == 1)
    #expect(Self.joined(rig.worlds[1].clients[0].notifications, Self.a) == 1)
    // One record per member, each written once.
    #expect(rig.bucket.records.count == 2)
    #expect(rig.writes(of: 0).count == 1)
    #expect(rig.writes(of: 1).count == 1)
  }

  @Test func quitOnOneEdge_isQuitOnTheOther() throws {
    var rig = try Self.twoEdges()
    rig.worlds[0].leave(0)
    rig.run(for: .milliseconds(100))
    let offline = Self.offline(rig.worlds[1].clients[0].log, Self.a)
    #expect(offline.map(\.reason) == [.quit])
    // The left record goes once its LEFT was repeated.
    rig.run(for: .seconds(5))
    #expect(rig.bucket.records.keys.sorted() == ["c.lobby.2002"])
  }

  @Test func activeRemoteMember_neverLooksInterrupted_andCostsTheBusNothing() throws {
    var rig = try Self.twoEdges()
    let before = rig.commands.map(\.count)
    rig.run(for: .seconds(60))
    for world in rig.worlds {
      let notes = world.clients[0].notifications
      #expect(!notes.contains { if case .remoteMemberInterrupted = $0 { true } else { false } })
      #expect(!notes.contains { if case .userOffline = $0 { true } else { false } })
    }
    // Steady state: beacons only (one a second per edge), no write.
    for index in rig.worlds.indices {
      let steady = rig.commands[index][before[index]...]
      #expect(!steady.contains { if case .write = $0 { true } else { false } })
      let beacons = steady.filter {
        if case .publish(FleetBeacon.subject, _) = $0 { true } else { false }
      }
      #expect((59...61).contains(beacons.count))
    }
  }

  @Test func deadEdge_itsMembersAreDroppedAt20sFromItsLastBeacon_andReapedAt30s() throws {
    var rig = try Self.twoEdges()
    rig.run(for: .seconds(3))
    let lastBeacon = rig.now  // beacons every second: the last one at most 1 s before
    rig.kill(0)
    rig.run(for: .seconds(40))
    let offline = Self.offline(rig.worlds[1].clients[0].log, Self.a)
    let at = try #require(offline.first)
    #expect(offline.count == 1)
    #expect(at.reason == .dropped)
    // Up to one beacon interval early, plus a presence interval late.
    let since = at.at.since(lastBeacon)
    #expect(since >= .seconds(18) && since <= .seconds(22), "\(since)")
    #expect(rig.bucket.records.keys.sorted() == ["c.lobby.2002"])
  }

  @Test func sameUIDOnAnotherEdge_endsTheOlderSessionOnce_withSameUIDLogin() throws {
    var rig = try Self.twoEdges()
    rig.worlds[1].addClient()
    try rig.worlds[1].join(1, uid: Self.a)
    rig.run(for: .seconds(3))
    let older = rig.worlds[0].clients[0]
    #expect(older.state == .failed)
    #expect(
      older.notifications.filter {
        $0 == .connectionStateChanged(.failed, .sameUIDLogin)
      }.count == 1)
    #expect(rig.worlds[1].clients[1].state == .connected)
    // The uid changed hands: the other member saw no one leave.
    #expect(Self.offline(rig.worlds[1].clients[0].log, Self.a).isEmpty)
    #expect(rig.worlds[0].server.fleetCounters?.lost == 1)
    let record = try #require(rig.bucket.records["c.lobby.1001"])
    #expect(record.owner.edgeID == Array("edge-1".utf8))
  }

  @Test func partition_laterJoinWins_whenNeitherWroteOnTheOther() throws {
    var rig = Rig(edges: 2)
    rig.worlds[0].addClient()
    rig.worlds[1].addClient()
    rig.cut(0)
    try rig.worlds[0].join(0, uid: Self.a)  // edge 0 admits it; its write fails
    rig.run(for: .seconds(2))
    try rig.worlds[1].join(0, uid: Self.a)  // later, on edge 1, written
    rig.run(for: .seconds(2))
    #expect(rig.worlds[0].clients[0].state == .connected)
    rig.reconnect(0)
    rig.run(for: .seconds(2))
    #expect(rig.worlds[0].clients[0].state == .failed)
    #expect(rig.worlds[1].clients[0].state == .connected)
    #expect(rig.bucket.records["c.lobby.1001"]?.owner.edgeID == Array("edge-1".utf8))
  }

  @Test func partition_theLaterJoinOnTheCutEdgeWins_whenItComesBack() throws {
    var rig = Rig(edges: 2)
    rig.worlds[0].addClient()
    rig.worlds[1].addClient()
    try rig.worlds[1].join(0, uid: Self.a)
    rig.run(for: .seconds(2))
    rig.cut(0)
    try rig.worlds[0].join(0, uid: Self.a)
    rig.run(for: .seconds(2))
    rig.reconnect(0)
    rig.run(for: .seconds(2))
    #expect(rig.worlds[0].clients[0].state == .connected)
    #expect(rig.worlds[1].clients[0].state == .failed)
    #expect(rig.bucket.records["c.lobby.1001"]?.owner.edgeID == Array("edge-0".utf8))
  }

  @Test func kickThroughAnotherEdge_reachesTheDevice_andTheBanHoldsOnEveryEdge() throws {
    var rig = try Self.twoEdges()
    rig.worlds[1].kick(uid: Self.a, in: "lobby", banSeconds: 600)
    rig.run(for: .seconds(1))
    #expect(rig.worlds[0].clients[0].state == .failed)
    #expect(rig.worlds[0].clients[0].reason == .bannedByServer)
    #expect(
      rig.worlds[0].server.isBanned(.channel(Fixture.channel, uid: Self.a), rig.worlds[0].wallClock)
    )
    #expect(Self.offline(rig.worlds[1].clients[0].log, Self.a).map(\.reason) == [.quit])
  }

  @Test func busDown_edgesServeTheirOwn_andTheRecordsAreWrittenWhenItIsBack() throws {
    var rig = Rig(edges: 2)
    rig.cut(0)
    rig.worlds[0].addClient()
    try rig.worlds[0].join(0, uid: Self.a)
    rig.run(for: .seconds(2))
    #expect(rig.worlds[0].clients[0].state == .connected)
    #expect(rig.bucket.records.isEmpty)
    rig.reconnect(0)
    rig.run(for: .milliseconds(100))
    #expect(rig.bucket.records.keys.sorted() == ["c.lobby.1001"])
  }

  @Test func bucketLost_theEdgesWriteTheirRecordsAgain_andSettle() throws {
    var rig = try Self.twoEdges()
    let before = rig.commands.map { $0.count }
    rig.loseBucket()
    rig.run(for: .seconds(5))
    #expect(rig.bucket.records.keys.sorted() == ["c.lobby.1001", "c.lobby.2002"])
    // One create each, not a conflict a second on a revision the new bucket never had.
    for index in rig.worlds.indices {
      let writes = rig.commands[index][before[index]...].filter {
        if case .write = $0 { true } else { false }
      }
      #expect(writes.count == 1, "edge \(index): \(writes)")
      #expect(rig.worlds[index].clients[0].state == .connected)
    }
    #expect(Self.offline(rig.worlds[0].clients[0].log, Self.b).isEmpty)
  }

  @Test func restartedEdge_reapsItsPreviousIncarnationsRecords() throws {
    var rig = try Self.twoEdges()
    // Edge 0 restarts: a new incarnation, the same id, no sessions; its device rejoins.
    rig.worlds[0].restartServer()
    rig.reconnect(0)
    rig.run(for: .seconds(5))
    let incarnation = try #require(rig.worlds[0].server.config.fleetIncarnation)
    #expect(incarnation != 1000)
    #expect(rig.bucket.records["c.lobby.1001"]?.owner.incarnation == incarnation)
    #expect(rig.worlds[0].clients[0].state == .connected)
    #expect(rig.bucket.records.values.allSatisfy { $0.owner.incarnation != 1000 })
  }
}

/// The login profile across edges: members of login channels, and one session per user id.
struct EdgeLoginFleetTests {
  typealias Rig = FleetRig<LoginClient>
  static let alice = LoginBench.user("alice")
  static let bob = LoginBench.user("bob")
  static let team = LoginBench.channel("team")

  static func client(_ rig: inout Rig, edge: Int, seed: UInt64) -> Int {
    rig.worlds[edge].add(LoginClient(config: LoginConfig(appID: Fixture.appID), seed: seed))
  }

  static func told(_ rig: Rig, edge: Int, _ i: Int) -> [LoginNotification] {
    rig.worlds[edge].clients[i].steps.flatMap(\.notifications)
  }

  static func memberEvents(_ notifications: [LoginNotification]) -> [String] {
    notifications.compactMap {
      switch $0 {
      case .memberJoined(let channel, let user):
        "joined \(String(decoding: channel, as: UTF8.self)) \(String(decoding: user, as: UTF8.self))"
      case .memberLeft(let channel, let user):
        "left \(String(decoding: channel, as: UTF8.self)) \(String(decoding: user, as: UTF8.self))"
      default: nil
      }
    }
  }

  /// Alice logged in on edge 0 and Bob on edge 1, both in "team".
  static func aliceAndBob() throws -> Rig {
    var rig = Rig(edges: 2)
    let a = client(&rig, edge: 0, seed: 11)
    let b = client(&rig, edge: 1, seed: 12)
    #expect(
      rig.worlds[0].login(a, token: rig.worlds[0].token(for: alice, expiresIn: 3600), user: alice)
        == nil)
    #expect(
      rig.worlds[1].login(b, token: rig.worlds[1].token(for: bob, expiresIn: 3600), user: bob)
        == nil)
    rig.run(for: .seconds(1))
    #expect(
      rig.worlds[0].call(a) { s, now, out throws(TetherError) in
        try s.joinChannel(team, now: now, into: &out)
      } == nil)
    rig.run(for: .seconds(1))
    #expect(
      rig.worlds[1].call(b) { s, now, out throws(TetherError) in
        try s.joinChannel(team, now: now, into: &out)
      } == nil)
    rig.run(for: .seconds(2))
    return rig
  }

  @Test func membersOfALoginChannel_onTwoEdges_getEachOthersEvents() throws {
    var rig = try Self.aliceAndBob()
    #expect(Self.memberEvents(Self.told(rig, edge: 0, 0)) == ["joined team bob"])
    #expect(
      rig.worlds[1].call(0) { s, now, out throws(TetherError) in
        try s.leaveChannel(Self.team, now: now, into: &out)
      } == nil)
    rig.run(for: .seconds(2))
    #expect(Self.memberEvents(Self.told(rig, edge: 0, 0)) == ["joined team bob", "left team bob"])
    #expect(rig.bucket.records.keys.sorted() == ["l.team.alice", "u.alice", "u.bob"])
  }

  @Test func logoutOnOneEdge_isLeftOnTheOther() throws {
    var rig = try Self.aliceAndBob()
    #expect(rig.worlds[1].logout(0) == nil)
    rig.run(for: .seconds(2))
    #expect(Self.memberEvents(Self.told(rig, edge: 0, 0)) == ["joined team bob", "left team bob"])
  }

  @Test func sameUserOnAnotherEdge_endsTheOlderLogin_withRemoteLogin() throws {
    var rig = try Self.aliceAndBob()
    let again = Self.client(&rig, edge: 1, seed: 13)
    #expect(
      rig.worlds[1].login(
        again, token: rig.worlds[1].token(for: Self.alice, expiresIn: 3600), user: Self.alice)
        == nil)
    rig.run(for: .seconds(3))
    #expect(rig.worlds[0].clients[0].state == .aborted)
    #expect(
      Self.told(rig, edge: 0, 0).filter { $0 == .connectionStateChanged(.aborted, .remoteLogin) }
        .count == 1)
    #expect(rig.worlds[1].clients[again].state == .connected)
    #expect(rig.bucket.records["u.alice"]?.owner.edgeID == Array("edge-1".utf8))
  }

  @Test func deadEdge_itsLoginMembersLeaveAfterTheGrace() throws {
    var rig = try Self.aliceAndBob()
    rig.kill(1)
    rig.run(for: .seconds(25))
    #expect(Self.memberEvents(Self.told(rig, edge: 0, 0)) == ["joined team bob"])
    rig.run(for: .seconds(10))
    #expect(Self.memberEvents(Self.told(rig, edge: 0, 0)) == ["joined team bob", "left team bob"])
  }
}
