import TetherCore

/// A minimal edge server for virtual-time tests of the core: one channel, sessions by
/// cookie, accept/resume, heartbeat answers, presence digests every second, and
/// forgetting sessions silent for 25 s. The real server (tether-edge) is its own code; this
/// one exists so the core's timeline can be played at default thresholds in microseconds.
public struct SimServer {
  public struct Session {
    public var client: Int
    public var uid: UInt32
    public var lastHeard: Instant
  }

  public var sessions: [UInt64: Session] = [:]
  public var nextUID: UInt32 = 1000
  public var forgetAfter: Interval = .seconds(25)
  public var presenceInterval: Interval = .seconds(1)
  public var nextPresence: Instant = .s(1)
  /// Every accept sent, with whether it resumed a held session.
  public var accepts: [(client: Int, resumed: Bool)] = []

  public typealias Outbox = [(client: Int, packet: Packet)]

  public mutating func receive(_ bytes: [UInt8], from client: Int, now: Instant) -> Outbox {
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
  public mutating func tick(now: Instant) -> Outbox {
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
