import TetherCore

/// Clients (each a ``Harness``), the ``SimServer`` and a network with a fixed one-way
/// latency whose link to any client can be cut and healed, all on one virtual clock.
public struct Simulation {
  public var now: Instant = .zero
  public var clients: [Harness]
  public var server = SimServer()
  public var latency: Interval = .ms(100)
  public var linkUp: [Bool]
  /// When each client last received a packet (its "last data").
  public private(set) var lastDelivered: [Instant?]
  /// When the server last received a packet from each client.
  public private(set) var lastHeardByServer: [Instant?]
  private var inflight: [(at: Instant, toServer: Bool, client: Int, bytes: [UInt8])] = []

  public init(clients count: Int, seed: UInt64 = 1) {
    clients = (0..<count).map { Harness(seed: seed &+ UInt64($0)) }
    linkUp = Array(repeating: true, count: count)
    lastDelivered = Array(repeating: nil, count: count)
    lastHeardByServer = Array(repeating: nil, count: count)
  }

  /// Runs `body` on client `i` at the current time and ships what it sent.
  public mutating func on<E: Error>(_ i: Int, _ body: (inout Harness) throws(E) -> Void) throws(E) {
    clients[i].now = now
    let mark = clients[i].mark
    try body(&clients[i])
    for (_, packet) in clients[i].sent[mark.sent...] {
      inflight.append((now + latency, true, i, packet.encoded))
    }
  }

  /// Plays everything up to `time`: deliveries, then the server's tick, then clients'
  /// deadlines, each at its exact instant.
  public mutating func run(until time: Instant) {
    while true {
      let delivery = inflight.indices.min { inflight[$0].at < inflight[$1].at }
      let clientDue = clients.indices.compactMap { i in
        clients[i].session.nextDeadline.map { (i, $0) }
      }
      .min { $0.1 < $1.1 }
      var next = server.nextPresence
      if let d = delivery { next = min(next, inflight[d].at) }
      if let c = clientDue { next = min(next, c.1) }
      guard next <= time else { break }
      now = next
      if let d = delivery, inflight[d].at == next {
        deliver(inflight.remove(at: d))
      } else if server.nextPresence == next {
        ship(server.tick(now: now))
      } else if let (i, _) = clientDue {
        on(i) { h in h.step { s, now, out in s.advance(to: now, into: &out) } }
      }
    }
    now = time
  }

  private mutating func deliver(_ item: (at: Instant, toServer: Bool, client: Int, bytes: [UInt8]))
  {
    guard linkUp[item.client] else { return }
    if item.toServer {
      lastHeardByServer[item.client] = now
      ship(server.receive(item.bytes, from: item.client, now: now))
    } else {
      lastDelivered[item.client] = now
      on(item.client) { h in
        h.step { s, now, out in _ = s.receive(datagram: item.bytes[...], now: now, into: &out) }
      }
    }
  }

  private mutating func ship(_ outbox: SimServer.Outbox) {
    for (client, packet) in outbox {
      inflight.append((now + latency, false, client, packet.encoded))
    }
  }
}

extension Simulation {
  /// Client indices of the seed timeline.
  public static let deviceA = 0
  public static let deviceB = 1

  /// SPEC.md's seed timeline: device B (uid 2) joins at 0 s, device A (uid 1) at T0 = 10 s;
  /// A's link is cut at T3 = 15 s and, if `heal` is given, healed then; played to `end`.
  public static func seedTimeline(healAt heal: Instant? = nil, until end: Instant)
    throws(TetherError) -> Simulation
  {
    var sim = Simulation(clients: 2)
    try sim.on(deviceB) { h throws(TetherError) in try h.join(uid: 2) }
    sim.run(until: .s(10))
    try sim.on(deviceA) { h throws(TetherError) in try h.join(uid: 1) }
    sim.run(until: .s(15))
    sim.linkUp[deviceA] = false
    if let heal {
      sim.run(until: heal)
      sim.linkUp[deviceA] = true
    }
    sim.run(until: end)
    return sim
  }
}
