// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TetherLab

/// The fleet's rows (docs/FLEET.md): a real nats-server with JetStream and two `tether-edge
/// --fleet` processes on loopback.
/// - How soon a member's join and quit reach another member on the same edge and on the
///   other edge: C devices (examples/device) join edge 1 one after the other while an
///   observer waits on each edge; each figure is the observer's user-joined (user-offline
///   QUIT) line minus the joiner's join call (leave call), both the devices' own monotonic
///   stamps. The join's figure includes its handshake; the difference between the two
///   edges is what the fleet adds.
/// - What the bus carries in steady state: nats-server's own counters (`/varz`) over one
///   minute of the edges' time (scaled) with every device joined and heartbeating.
/// - The edge's capacity with the fleet on, beside the same measure with it off
///   (``EdgeCapacity``, edge-load's sealed heartbeats).
struct FleetRows {
  var sameEdgeJoin: [Double] = []
  var otherEdgeJoin: [Double] = []
  var sameEdgeQuit: [Double] = []
  var otherEdgeQuit: [Double] = []
  var steadySessions = 0
  var edges = 2
  var steadySeconds = 0.0
  var busMessagesIn = 0
  var busMessagesOut = 0
  var capacityOn: EdgeCapacity?
  var mirror: FleetMirror?

  static let scale = 0.05

  static func measure(edge: String, device: String, joins: Int) throws -> FleetRows {
    var rows = FleetRows()
    let nats = try NatsServerProcess(monitoring: true)
    defer { nats.remove() }
    try nats.start()
    let edges = try ["bench-1", "bench-2"].map { id in
      let process = try EdgeProcess(
        binary: edge, timeScale: scale,
        extraArguments: ["--fleet", nats.url, "--edge-id", id, "--log-level", "notice"])
      guard process.waitForLog("fleet-state-read", timeout: 10) != nil else {
        throw ValidationError("\(id) did not read the fleet's state")
      }
      return process
    }
    defer { for process in edges { process.stop() } }
    func join(_ name: String, _ index: Int, uid: UInt32) throws -> DeviceProcess {
      let host = try DeviceProcess(
        binary: device, name: name, server: edges[index].address, appID: edges[index].appID,
        channel: "bench", uid: uid,
        token: try edges[index].token(channel: "bench", uid: uid, expireSeconds: 3600),
        scale: scale)
      guard host.waitForState("CONNECTED", "JOIN_SUCCESS") != nil else {
        throw ValidationError("\(name) did not join \(edges[index].address)")
      }
      return host
    }
    let near = try join("near", 0, uid: 1)
    let far = try join("far", 1, uid: 2)
    var kept: [DeviceProcess] = []
    for index in 0..<joins {
      let uid = UInt32(100 + index)
      let joiner = try join("j\(index)", 0, uid: uid)
      guard let joined = joiner.waitForState("CONNECTING", "CONNECTING"),
        let seenNear = near.waitFor("user-joined uid=\(uid)"),
        let seenFar = far.waitFor("user-joined uid=\(uid)")
      else { throw ValidationError("the join of uid \(uid) was not seen") }
      rows.sameEdgeJoin.append(seenNear.time - joined.time)
      rows.otherEdgeJoin.append(seenFar.time - joined.time)
      guard index.isMultiple(of: 2) else {
        kept.append(joiner)  // stays joined for the steady window
        continue
      }
      let before = joiner.lines.count
      _ = joiner.leave()
      guard let left = joiner.waitForState("DISCONNECTED", "LEAVE_CHANNEL", from: before),
        let quitNear = near.waitFor("user-offline uid=\(uid) reason=QUIT"),
        let quitFar = far.waitFor("user-offline uid=\(uid) reason=QUIT")
      else { throw ValidationError("the quit of uid \(uid) was not seen") }
      rows.sameEdgeQuit.append(quitNear.time - left.time)
      rows.otherEdgeQuit.append(quitFar.time - left.time)
    }
    // Steady state: everyone joined, heartbeats only, one minute of the edges' time.
    // Past the JOINED digests, the left records' deletion (3 presence intervals) and the
    // purge of their tombstones (at most forget-after later: 30 s of the edges' time), and
    // once more for the other edge's purge.
    usleep(useconds_t(65 * scale * 1e6))
    rows.steadySessions = kept.count + 2
    rows.steadySeconds = 60 * scale
    let before = try nats.messageCounts()
    usleep(useconds_t(rows.steadySeconds * 1e6))
    let after = try nats.messageCounts()
    rows.busMessagesIn = after.received - before.received
    rows.busMessagesOut = after.sent - before.sent
    for host in kept + [near, far] { _ = host.leave() }
    return rows
  }

  /// Milliseconds, "p50 / p99" of `values` (seconds).
  static func percentiles(_ values: [Double]) -> String {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return "-" }
    func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
    return "\(Target.format(at(0.5) * 1000)) / \(Target.format(at(0.99) * 1000)) ms"
  }

  /// Bus messages per session per minute in steady state, beyond the edges' beacons (one a
  /// presence interval each, 60 a minute).
  var perSessionPerMinute: Double {
    let beacons = Double(edges * 60)
    return max(0, Double(busMessagesIn) - beacons) / Double(max(1, steadySessions))
  }

  var summary: String {
    "fleet: join seen on the same edge \(Self.percentiles(sameEdgeJoin)), on the other "
      + "\(Self.percentiles(otherEdgeJoin)); steady minute: \(busMessagesIn) messages into "
      + "the bus, \(busMessagesOut) out, for \(steadySessions) sessions on \(edges) edges"
      + (mirror.map {
        "; \($0.records) records read in \(Target.format($0.fullReadSeconds * 1000)) ms, "
          + "\(Target.format($0.bytesPerRecord)) bytes each"
      } ?? "")
  }
}
