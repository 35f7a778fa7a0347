@testable import TetherCore

/// A minimal edge server for virtual-time tests of the core: one channel, sessions by
/// cookie, accept/resume, heartbeat answers, presence digests every second, and
/// forgetting sessions silent for 25 s. The real server (tether-edge) is its own code; this
/// one exists so the core's timeline can be played at default thresholds in microseconds.
struct SimServer {
  struct Session {
    var client: Int
    var uid: UInt32
    var lastHeard: Instant
  }

  var sessions: [UInt64: Session] = [:]
  var nextUID: UInt32 = 1000
  var forgetAfter: Interval = .seconds(25)
  var presenceInterval: Interval = .seconds(1)
  var nextPresence: Instant = .s(1)
  /// Every accept sent, with whether it resumed a held session.
  var accepts: [(client: Int, resumed: Bool)] = []

  typealias Outbox = [(client: Int, packet: Packet)]

  mutating func receive(_ bytes: [UInt8], from client: Int, now: Instant) -> Outbox {
    guard let packet = try? Packet.decode(bytes[...]) else { return [] }
    let cookie = packet.cookie
    switch packet.message {
    case .join(let request):
      if var held = sessions[cookie] {
        held.lastHeard = now
        sessions[cookie] = held
        accepts.append((client, true))
        return [(client, accept(cookie, uid: held.uid, resumed: true))]
      }
      let uid = request.uid == 0 ? nextUID : request.uid
      if request.uid == 0 { nextUID += 1 }
      let others = sessions.filter { $0.key != cookie }
      sessions[cookie] = Session(client: client, uid: uid, lastHeard: now)
      accepts.append((client, false))
      var out: Outbox = [(client, accept(cookie, uid: uid, resumed: false))]
      let snapshot = others.values.map {
        PresenceEntry(
          uid: $0.uid, kind: .joined, silentForMs: now.since($0.lastHeard).clampedMilliseconds)
      }
      if !snapshot.isEmpty { out.append((client, presence(cookie, snapshot))) }
      for (otherCookie, other) in others {
        out.append(
          (
            other.client,
            presence(otherCookie, [PresenceEntry(uid: uid, kind: .joined, silentForMs: 0)])
          ))
      }
      return out
    case .heartbeat(let sequence):
      guard var held = sessions[cookie] else {
        return [(client, Packet(cookie: cookie, message: .sessionUnknown))]
      }
      held.lastHeard = now
      sessions[cookie] = held
      return [
        (
          client,
          Packet(cookie: cookie, message: .heartbeatAck(sequence: sequence, serverTimeMs: 0))
        )
      ]
    case .leave:
      guard let gone = sessions.removeValue(forKey: cookie) else { return [] }
      return sessions.map {
        (
          $0.value.client,
          presence($0.key, [PresenceEntry(uid: gone.uid, kind: .left, silentForMs: 0)])
        )
      }
    case .renewToken:
      guard sessions[cookie] != nil else { return [] }
      return [
        (
          client,
          Packet(
            cookie: cookie, message: .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 0)))
        )
      ]
    default:
      return []
    }
  }

  /// Presence digests to everyone, and forgetting the long silent.
  mutating func tick(now: Instant) -> Outbox {
    nextPresence = now + presenceInterval
    sessions = sessions.filter { now.since($0.value.lastHeard) < forgetAfter }
    var out: Outbox = []
    for (cookie, session) in sessions {
      let entries = sessions.filter { $0.key != cookie }.values.map {
        PresenceEntry(
          uid: $0.uid, kind: .alive, silentForMs: now.since($0.lastHeard).clampedMilliseconds)
      }
      if !entries.isEmpty { out.append((session.client, presence(cookie, entries))) }
    }
    return out
  }

  private func accept(_ cookie: UInt64, uid: UInt32, resumed: Bool) -> Packet {
    Packet(
      cookie: cookie,
      message: .accept(JoinAccept(uid: uid, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: resumed)))
  }

  private func presence(_ cookie: UInt64, _ entries: [PresenceEntry]) -> Packet {
    Packet(cookie: cookie, message: .presence(try! PresenceDigest(entries)))
  }
}

/// Clients (each a ``Harness``), the ``SimServer`` and a network with a fixed one-way
/// latency whose link to any client can be cut and healed, all on one virtual clock.
struct Simulation {
  var now: Instant = .zero
  var clients: [Harness]
  var server = SimServer()
  var latency: Interval = .ms(100)
  var linkUp: [Bool]
  private var inflight: [(at: Instant, toServer: Bool, client: Int, bytes: [UInt8])] = []

  init(clients count: Int, seed: UInt64 = 1) {
    clients = (0..<count).map { Harness(seed: seed &+ UInt64($0)) }
    linkUp = Array(repeating: true, count: count)
  }

  /// Runs `body` on client `i` at the current time and ships what it sent.
  mutating func on(_ i: Int, _ body: (inout Harness) throws -> Void) rethrows {
    clients[i].now = now
    let mark = clients[i].mark
    try body(&clients[i])
    for (_, packet) in clients[i].sent[mark.sent...] {
      inflight.append((now + latency, true, i, packet.encoded))
    }
  }

  /// Plays everything up to `time`: deliveries, then the server's tick, then clients'
  /// deadlines, each at its exact instant.
  mutating func run(until time: Instant) {
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
      ship(server.receive(item.bytes, from: item.client, now: now))
    } else {
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
