// SPDX-License-Identifier: Apache-2.0
// `make fleet-demo`: three tether-edge processes of one fleet through a real nats-server with
// JetStream on loopback (docs/FLEET.md), a C device on each, all in one channel: who saw
// what and when, against what the rules give.
import Foundation
import TetherLab

/// The fleet's timeline; returns how many events were missed, nil when it could not run.
func fleetDemo(_ setup: Setup) -> Int? {
  let scale = setup.scale
  let (offline, beacon) = (20.0 * scale, 1.0 * scale)
  var report = Report(tolerance: max(0.025, 0.1 * setup.interrupted))
  print("Edges as a fleet (tether-edge --fleet, through NATS)\n")
  do {
    let nats = try NatsServerProcess.started()
    defer { nats.remove() }
    let edges = try ["e1", "e2", "e3"].map { id in
      let edge = try EdgeProcess(
        binary: setup.edge, timeScale: scale,
        extraArguments: ["--fleet", nats.url, "--edge-id", id, "--log-level", "notice"])
      guard edge.waitForLog("fleet-state-read", timeout: 10) != nil else {
        throw LabError("\(id) did not read the fleet's state from \(nats.url)")
      }
      return edge
    }
    defer { for edge in edges { edge.stop() } }
    print("nats-server -js on \(nats.url); edges e1, e2, e3 on \(edges.map(\.address))")
    print(
      String(format: "thresholds scaled by %.2f: beacons every %.0f ms, ", scale, beacon * 1000)
        + String(format: "remote offline %.0f ms\n", offline * 1000))
    func device(_ name: String, _ edge: Int, uid: UInt32) throws -> DeviceProcess {
      try DeviceProcess(
        binary: setup.device, name: name, server: edges[edge].address,
        appID: edges[edge].appID, channel: "lobby", uid: uid,
        token: try edges[edge].token(channel: "lobby", uid: uid, expireSeconds: 3600),
        scale: scale)
    }
    let a = try device("A", 0, uid: 1)
    guard let joined = a.waitForState("CONNECTED", "JOIN_SUCCESS") else {
      throw LabError("A did not join e1")
    }
    report.t0 = joined.time
    let t0 = report.t0
    report.mark("A (uid 1) joined on e1", at: joined.time)
    let b = try device("B", 1, uid: 2)
    guard let bJoined = b.waitForState("CONNECTED", "JOIN_SUCCESS") else {
      throw LabError("B did not join e2")
    }
    report.mark("B (uid 2) joined on e2", at: bJoined.time)
    // A member of another edge is one KV write and one watcher delivery away.
    let bus = 0.1 + 2 * beacon
    report.window(
      "user-joined uid=2", "A", after: bJoined.time - t0, by: bJoined.time - t0 + bus,
      a.waitFor("user-joined uid=2"))
    report.window(
      "user-joined uid=1", "B", after: bJoined.time - t0, by: bJoined.time - t0 + bus,
      b.waitFor("user-joined uid=1"))
    let c = try device("C", 2, uid: 3)
    guard let cJoined = c.waitForState("CONNECTED", "JOIN_SUCCESS") else {
      throw LabError("C did not join e3")
    }
    report.mark("C (uid 3) joined on e3", at: cJoined.time)
    for (name, host) in [("A", a), ("B", b)] {
      report.window(
        "user-joined uid=3", name, after: cJoined.time - t0, by: cJoined.time - t0 + bus,
        host.waitFor("user-joined uid=3"))
    }
    // Active members on other edges never look interrupted between beacons.
    sleep(until: cJoined.time + 10 * scale)
    report.never("remote-interrupted (any, 10 beacons)", "A", a.first("remote-interrupted"))
    report.never("remote-interrupted (any, 10 beacons)", "B", b.first("remote-interrupted"))
    // B leaves: a QUIT, written once, seen on e1 and e3.
    let leaveAt = report.goodbye(
      "leave_channel: DISCONNECTED / LEAVE_CHANNEL", "B", b,
      line: "state DISCONNECTED LEAVE_CHANNEL"
    ) { _ = b.leave() }
    for (name, host) in [("A", a), ("C", c)] {
      report.window(
        "user-offline uid=2 QUIT", name, after: leaveAt - t0, by: leaveAt - t0 + bus,
        host.waitFor("user-offline uid=2 reason=QUIT"))
    }
    // e3 dies with C: A drops C from the silence of e3's beacons.
    sleep(until: leaveAt + 5 * scale)
    let killAt = monotonicSeconds()
    edges[2].kill()
    c.stop()
    report.mark("e3 killed (kill -9), and C with it", at: killAt)
    report.window(
      "user-offline uid=3 DROPPED", "A", after: killAt - t0 + offline - beacon,
      by: killAt - t0 + offline + bus, a.waitFor("user-offline uid=3 reason=DROPPED"))
    // The same uid joins on e2: the older session, on e1, ends once.
    let d = try device("D", 1, uid: 1)
    guard let dJoined = d.waitForState("CONNECTED", "JOIN_SUCCESS") else {
      throw LabError("D did not join e2")
    }
    report.mark("D joined on e2 as uid 1", at: dJoined.time)
    report.window(
      "FAILED / SAME_UID_LOGIN", "A", after: dJoined.time - t0, by: dJoined.time - t0 + bus,
      a.waitForState("FAILED", "SAME_UID_LOGIN"))
    _ = d.leave()
  } catch {
    print("tether-demo: \(error)")
    return nil
  }
  return report.printed()
}
