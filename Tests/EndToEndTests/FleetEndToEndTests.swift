// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// Edges of one fleet through a real `nats-server -js` on loopback (issue 27): C devices on
/// different `tether-edge --fleet` processes see each other as on one edge; the bus killed,
/// frozen or absent at start never stops an edge serving its own. Thresholds scaled by 0.05
/// (presence and beacons every 50 ms, interrupted 0.2 s, DROPPED 1 s, forget 1.5 s); bounds
/// generous, as the other end-to-end suites'.
@Suite(.serialized, Lab.enabled) struct FleetEndToEndTests {
  static let scale = 0.05

  /// An edge of the fleet on `nats`, named `id`, once it has read the fleet's state (or at
  /// once with `waitForBus` false: the bus may be away).
  static func edge(_ id: String, _ nats: String, waitForBus: Bool = true) throws -> EdgeProcess {
    let edge = try EdgeProcess(
      binary: Lab.edge, timeScale: scale,
      extraArguments: ["--fleet", nats, "--edge-id", id, "--log-level", "notice"])
    if waitForBus {
      #expect(edge.waitForLog("fleet-state-read", timeout: 10) != nil, "\(id) read the fleet")
    }
    return edge
  }

  /// A nats-server and edges of its fleet, named e1, e2, ..., stopped together.
  final class FleetLab {
    let nats: NatsServerProcess
    let edges: [EdgeProcess]

    init(edges count: Int) throws {
      nats = try NatsServerProcess.started()
      let url = nats.url
      edges = try (1...count).map { try FleetEndToEndTests.edge("e\($0)", url) }
    }

    func stop() {
      for edge in edges { edge.stop() }
      nats.remove()
    }
  }

  static func joined(_ name: String, _ edge: EdgeProcess, uid: UInt32) throws -> DeviceProcess {
    let device = try Lab.device(name, edge: edge, uid: uid, scale: scale)
    #expect(device.reaches("CONNECTED", "JOIN_SUCCESS"), "\(name) joined")
    return device
  }

  @Test func threeEdges_joinQuitAndDropAcrossEdges_withNoFlapping() throws {
    let lab = try FleetLab(edges: 3)
    defer { lab.stop() }
    let edges = lab.edges
    let a = try Self.joined("A", edges[0], uid: 1)
    let b = try Self.joined("B", edges[1], uid: 2)
    let c = try Self.joined("C", edges[2], uid: 3)
    for (device, others) in [(a, [2, 3]), (b, [1, 3]), (c, [1, 2])] {
      for uid in others { #expect(device.waitFor("user-joined uid=\(uid)") != nil) }
    }
    // Twenty beacon intervals, five times interrupted_after: active remote members stay so.
    usleep(1_000_000)
    for device in [a, b, c] {
      #expect(device.first("remote-interrupted") == nil)
      #expect(device.first("user-offline") == nil)
    }
    #expect(a.leave() == 0)
    #expect(b.waitFor("user-offline uid=1 reason=QUIT") != nil)
    #expect(c.waitFor("user-offline uid=1 reason=QUIT") != nil)
    // Edge 3 dies with its device: B drops C from the silence of e3's beacons.
    let killed = monotonicSeconds()
    edges[2].kill()
    c.stop()
    let dropped = try #require(b.waitFor("user-offline uid=3 reason=DROPPED"))
    #expect(dropped.time >= killed + 0.7 && dropped.time <= killed + 3, "\(dropped.time - killed)")
    #expect(b.leave() == 0)
  }

  @Test func sameUIDOnAnotherEdge_theOlderEndsWithSameUIDLogin() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let (e1, e2) = (lab.edges[0], lab.edges[1])
    let older = try Self.joined("old", e1, uid: 7)
    let watcher = try Self.joined("W", e1, uid: 8)
    #expect(watcher.waitFor("user-joined uid=7") != nil)
    usleep(200_000)
    let newer = try Self.joined("new", e2, uid: 7)
    #expect(older.reaches("FAILED", "SAME_UID_LOGIN"))
    usleep(500_000)
    #expect(older.states.filter { $0 == "FAILED SAME_UID_LOGIN" }.count == 1)
    #expect(newer.first("state FAILED") == nil)
    // The uid changed hands: its other member saw nobody leave.
    #expect(watcher.first("user-offline uid=7") == nil)
    _ = newer.leave()
    _ = watcher.leave()
  }

  @Test func kickThroughAnotherEdge_reachesTheDevice() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let (e1, e2) = (lab.edges[0], lab.edges[1])
    let device = try Self.joined("D", e1, uid: 5)
    let kick = try e2.kick(channel: Lab.channel, uid: 5, banSeconds: 60)
    #expect(kick.status == 0 || kick.lines.joined().contains("no such member"), "\(kick)")
    #expect(device.reaches("FAILED", "BANNED_BY_SERVER"))
  }

  @Test func busRestarted_theEdgesReconcile_andWhoJoinedMeanwhileIsSeen() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let (nats, e1, e2) = (lab.nats, lab.edges[0], lab.edges[1])
    let b = try Self.joined("B", e2, uid: 2)
    nats.kill()
    #expect(e1.waitForLog("fleet-down", timeout: 10) != nil)
    // The bus is away: e1 serves its own device all the same.
    let a = try Self.joined("A", e1, uid: 1)
    try nats.start()
    #expect(b.waitFor("user-joined uid=1", timeout: 15) != nil)
    #expect(a.waitFor("user-joined uid=2", timeout: 15) != nil)
    _ = a.leave()
    _ = b.leave()
  }

  @Test func busFrozen_edgesServeTheirOwn_andCatchUpWhenItThaws() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let (nats, e1, e2) = (lab.nats, lab.edges[0], lab.edges[1])
    let b = try Self.joined("B", e2, uid: 2)
    nats.freeze()
    #expect(e1.waitForLog("fleet-down", timeout: 10) != nil)
    let a = try Self.joined("A", e1, uid: 1)
    nats.thaw()
    #expect(b.waitFor("user-joined uid=1", timeout: 15) != nil)
    _ = a.leave()
    _ = b.leave()
  }

  @Test func busUnreachableAtStart_theEdgeServes_andJoinsTheFleetWhenTheBusComes() throws {
    let nats = try NatsServerProcess()
    defer { nats.remove() }
    let e1 = try Self.edge("e1", nats.url, waitForBus: false)
    defer { e1.stop() }
    let a = try Self.joined("A", e1, uid: 1)
    try nats.start()
    #expect(e1.waitForLog("fleet-state-read", timeout: 15) != nil)
    let e2 = try Self.edge("e2", nats.url)
    defer { e2.stop() }
    let b = try Self.joined("B", e2, uid: 2)
    #expect(b.waitFor("user-joined uid=1", timeout: 10) != nil)
    #expect(a.waitFor("user-joined uid=2", timeout: 10) != nil)
    _ = a.leave()
    _ = b.leave()
  }

  @Test func edgeAddedWhileTheChannelIsBusy_itsDevicesSeeEveryMember_andAreSeen() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let a = try Self.joined("A", lab.edges[0], uid: 1)
    let b = try Self.joined("B", lab.edges[1], uid: 2)
    #expect(a.waitFor("user-joined uid=2") != nil)
    // A third edge comes up while A and B heartbeat: it reads the fleet's state at start.
    let e3 = try Self.edge("e3", lab.nats.url)
    defer { e3.stop() }
    let c = try Self.joined("C", e3, uid: 3)
    #expect(c.waitFor("user-joined uid=1") != nil)
    #expect(c.waitFor("user-joined uid=2") != nil)
    #expect(a.waitFor("user-joined uid=3") != nil)
    #expect(b.waitFor("user-joined uid=3") != nil)
    usleep(500_000)
    #expect(c.first("remote-interrupted") == nil)
    for device in [a, b, c] { _ = device.leave() }
  }

  @Test func loginProfile_membersAndTakeoverAcrossEdges() throws {
    let lab = try FleetLab(edges: 2)
    defer { lab.stop() }
    let (e1, e2) = (lab.edges[0], lab.edges[1])
    let alice = try Lab.messaging("alice", edge: e1, user: "alice", scale: Self.scale)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS"))
    usleep(300_000)
    let bob = try Lab.messaging("bob", edge: e2, user: "bob", scale: Self.scale)
    #expect(bob.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(alice.waitFor("member-joined channel=\(Lab.channel) user=bob") != nil)
    let again = try Lab.messaging("alice2", edge: e2, user: "alice", scale: Self.scale)
    #expect(again.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(alice.reaches("ABORTED", "REMOTE_LOGIN"))
    _ = bob.logout()
    _ = again.logout()
  }
}
