// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// The timeline of docs/BEHAVIOUR.md §1.4 on the simulator, default thresholds: device B (uid 2) joins
/// at 0 s, device A (uid 1) at T0 = 10 s, through the real edge server 100 ms away each
/// way; A's link is cut (both directions) at T3 = 15 s and, if `heal` is given, healed
/// then. Tokens never expire, so no token deadline runs beside the timeline's.
public enum SeedTimeline {
  /// Client indices.
  public static let deviceA = 0
  public static let deviceB = 1
  /// One way, every datagram, both directions.
  public static let latency = Interval.milliseconds(100)

  /// `count` clients 100 ms from a real edge server at scale 1, deliveries recorded.
  public static func world(clients count: Int) -> SimWorld {
    var world = SimWorld()
    world.recordsDeliveries = true
    for _ in 0..<count {
      let i = world.addClient()
      world.uplink[i] = LinkConditions(latency: latency)
      world.downlink[i] = LinkConditions(latency: latency)
    }
    return world
  }

  /// Client `i` joins as `uid` with a token that never expires.
  public static func join(_ world: inout SimWorld, _ i: Int, uid: UInt32) throws {
    let lobby = try ChannelName(validating: Array("lobby".utf8))
    try world.join(i, uid: uid, token: world.token(.channel(lobby, uid: uid), expiresAt: 0))
  }

  public static func play(healAt heal: Instant? = nil, until end: Instant) throws -> SimWorld {
    var world = world(clients: 2)
    try join(&world, deviceB, uid: 2)
    world.run(until: .s(10))
    try join(&world, deviceA, uid: 1)
    world.run(until: .s(15))
    world.linkUp[deviceA] = false
    if let heal {
      world.run(until: heal)
      world.linkUp[deviceA] = true
    }
    world.run(until: end)
    return world
  }
}

extension SimWorld {
  /// When client `i` last received a packet that proves the server heard it (an accept,
  /// a heartbeat ack) at or before `time`: its "last data" (needs ``recordsDeliveries``).
  public func lastData(of i: Int, atOrBefore time: Instant) -> Instant? {
    deliveries.last {
      guard !$0.toServer, $0.client == i, $0.at <= time else { return false }
      switch $0.packet?.message {
      case .accept?, .heartbeatAck?: return true
      default: return false
      }
    }?.at
  }

  /// When the server last received a datagram from client `i` at or before `time`.
  public func lastHeardByServer(_ i: Int, atOrBefore time: Instant) -> Instant? {
    deliveries.last { $0.toServer && $0.client == i && $0.at <= time }?.at
  }
}
