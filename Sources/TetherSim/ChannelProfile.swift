// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

// MARK: - The channel profile's client in the world

extension Harness: SimClient {
  public var nextDeadline: Instant? { session.nextDeadline }

  public mutating func advance(to now: Instant) -> [Sent] {
    act(at: now) { s, now, out in s.advance(to: now, into: &out) }
  }

  public mutating func speak(_ link: SecureLink<SimCrypto>) { secure = link }
  public var sessionWrites: Int { trace.count }
  public var lastHanded: Packet? { handed.map { Packet(cookie: cookie, message: $0) } }

  public mutating func receive(
    _ bytes: [UInt8], _ packet: Packet?, generation: UInt64, now: Instant
  ) -> [Sent] {
    self.now = now
    let mark = self.mark
    take(bytes[...])
    return wireSent(since: mark)
  }

  /// Runs `body` at `now`; returns what it sent.
  mutating func act<E: Error>(
    at now: Instant,
    _ body: (inout ChannelSession<SeededRandom>, Instant, inout ChannelOutput) throws(E) -> Void
  ) throws(E) -> [Sent] {
    self.now = now
    let mark = self.mark
    do throws(E) { try step(body) } catch {
      _ = wireSent(since: mark)
      throw error
    }
    return wireSent(since: mark)
  }

  /// What went on the wire in the step since `mark`: the layer's datagrams, each with the
  /// packet it stands for (``WireView``). A harness the world has not given its layer sent
  /// nothing on the wire.
  private func wireSent(since mark: Mark) -> [Sent] {
    guard let secure else { return [] }
    defer { secure.crypto.oracle.clearJournal() }
    let attempt = sent.last { Session.isAttempt($0.packet.message) }?.packet
    let renewal = {
      sent.last { if case .renewToken = $0.packet.message { true } else { false } }?.packet.message
    }
    return wire.map {
      (
        $0,
        WireView.packet(of: $0, attempt: attempt, renewal: renewal, oracle: secure.crypto.oracle)
      )
    }
  }

  /// The latest state change.
  public var lastState: ChannelNotification? { stateChanges.last }
}

extension World where Client == Harness {
  /// Adds a client whose link is up and perfect; `seed` feeds its cookies and jitter.
  @discardableResult
  public mutating func addClient(config: ChannelConfig = Fixture.config, seed: UInt64? = nil)
    -> Int
  {
    var client = Harness(config: config, seed: seed ?? UInt64(clients.count) &+ 11)
    client.now = now
    return add(client)
  }

  /// The channel and uid of client `i`'s session, if the edge holds it (under the session id
  /// its CONFIRMs named: ``serverKey(_:of:)``).
  public func serverSession(of i: Int) -> (channel: ChannelName, uid: UInt32)? {
    server.session(cookie: serverKey(clients[i].cookie, of: i))
  }

  /// Client `i` calls `join_channel`; what it sends goes out at once.
  public mutating func join(
    _ i: Int, channel: String = "lobby", uid: UInt32 = 0, token: Token? = nil
  ) throws {
    let name = try ChannelName(validating: Array(channel.utf8))
    let token = token ?? self.token(channel: channel, uid: uid)
    try act(i) { s, now, out throws(TetherError) in
      try s.join(token: token, channel: name, uid: uid, now: now, into: &out)
    }
  }

  public mutating func leave(_ i: Int) { act(i) { s, now, out in s.leave(now: now, into: &out) } }

  public mutating func renew(_ i: Int, _ token: Token) throws {
    try act(i) { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  /// Runs `body` on client `i` now, then sends what it sent.
  public mutating func act<E: Error>(
    _ i: Int,
    _ body: (inout ChannelSession<SeededRandom>, Instant, inout ChannelOutput) throws(E) -> Void
  ) throws(E) {
    try perform(i) { client, now throws(E) in try client.act(at: now, body) }
  }

  /// A token for `channel` and `uid`, expiring `seconds` after the current wall clock.
  public func token(channel: String = "lobby", uid: UInt32 = 0, expiresIn seconds: UInt64 = 3600)
    -> Token
  {
    let grant = TokenGrant.channel(try! ChannelName(validating: Array(channel.utf8)), uid: uid)
    return token(grant, expiresAt: wallClock + seconds)
  }

  /// A token for `channel` and `uid` expiring at `expiresAt` (unix seconds; 0: never), for
  /// any world's edge (``World/token(_:expiresAt:)-swift.type.method``).
  public static func token(channel: String = "lobby", uid: UInt32 = 0, expiresAt: UInt64) -> Token {
    let grant = TokenGrant.channel(try! ChannelName(validating: Array(channel.utf8)), uid: uid)
    return token(grant, expiresAt: expiresAt)
  }
}

// MARK: - The channel profile's scenarios

extension ChannelProfile {
  /// The app's calls a channel scenario plans.
  public enum Call: Sendable, CustomStringConvertible {
    /// The client calls join_channel; its token expires after `expiresIn` wall seconds
    /// (nil: an hour).
    case join(client: Int, expiresIn: UInt64?)
    case leave(client: Int)
    /// renew_token with a fresh one-hour token.
    case renew(client: Int)
    /// The device's address changed (the app says so, or the driver saw it).
    case networkChanged(client: Int, byUser: Bool)
    /// The operator kicks the client's uid through the admin entry point, banning it for
    /// `ban` s.
    case kick(client: Int, ban: UInt32)

    public var description: String {
      switch self {
      case .join(let c, let expiresIn):
        "client \(c) joins" + (expiresIn.map { " (token expires in \($0) s)" } ?? "")
      case .leave(let c): "client \(c) leaves"
      case .renew(let c): "client \(c) renews its token"
      case .networkChanged(let c, let byUser):
        "client \(c): network changed" + (byUser ? " (app)" : "")
      case .kick(let c, let ban):
        "admin kicks client \(c)" + (ban > 0 ? " and bans it for \(ban) s" : "")
      }
    }
  }

  public static let channels = ["lobby", "room2"]
  public static var noun: String { "scenario" }

  /// A few clients in one or two channels; thresholds heartbeat 100 ms, interrupted
  /// 400 ms, lost 1 s, remote offline 2 s, give up 3, 5 or 8 s; joins, leaves, renewals,
  /// network changes.
  public static var plan: PlanShape {
    PlanShape(
      salt: 0x5EED_5CE7_A210_0000, appSalt: 0xA99, duration: 8000, start: 1000, events: 6,
      moreEvents: 10,
      mix: PlanShape.weighted([
        .cut: 7, .faults: 4, .other(0): 2, .other(1): 2, .other(2): 2, .restartServer: 1,
        .other(3): 2,
      ]),
      faults: [.loss, .duplicate, .jitter, .spike],
      // Kicks and far duplicates came after the rest: up to two, drawn on their own.
      extra: (0x4B1C_D0B1, PlanShape.weighted([.other(4): 1, .faults: 1]), [.duplicateFar]))
  }

  public static func config(_ r: inout SeededRandom) -> ChannelConfig {
    var config = ChannelConfig(appID: Fixture.appID)
    config.heartbeatInterval = .milliseconds(100)
    config.interruptedAfter = .milliseconds(400)
    config.lostAfter = .milliseconds(1000)
    config.remoteOfflineAfter = .milliseconds(2000)
    config.giveUpAfter =
      [.milliseconds(3000), .milliseconds(5000), .milliseconds(8000)][Int(r.next() % 3)]
    config.tokenWillExpireBefore = .milliseconds(3000)
    config.retry = RetryPolicy(base: .milliseconds(50), cap: .milliseconds(800))
    return config
  }

  /// Each client's channel: the fourth one's may be another.
  public static func roles(_ count: Int, _ r: inout SeededRandom) -> [Int] {
    (0..<count).map { i in i == 3 && r.next() % 2 == 0 ? 1 : 0 }
  }

  public static func opening(_ i: Int, _ r: inout SeededRandom) -> [(
    at: Instant, action: ScenarioAction<Call>
  )] {
    let expiring = r.next() % 5 == 0
    return [
      (.ms(r.next() % 1000), .call(.join(client: i, expiresIn: expiring ? 2 + r.next() % 7 : nil)))
    ]
  }

  public static func thresholds(_ config: ChannelConfig) -> [UInt64] {
    [100, 400, 1000, 2000, 3000, config.giveUpAfter.nanoseconds / 1_000_000]
  }

  public static func event(_ kind: Int, client: Int, _ r: inout SeededRandom) -> ScenarioAction<
    Call
  > {
    switch kind {
    case 0: .call(.leave(client: client))
    case 1: .call(.join(client: client, expiresIn: r.next() % 4 == 0 ? 3 : nil))
    case 2: .call(.renew(client: client))
    case 3: .call(.networkChanged(client: client, byUser: r.next() % 2 == 0))
    default: .call(.kick(client: client, ban: r.next() % 2 == 0 ? 0 : 1 + UInt32(r.next() % 3)))
    }
  }

  public static func name(of i: Int, in scenario: Scenario<ChannelProfile>) -> String {
    "uid \(uid(of: i)) in \(scenario.channel(of: i))"
  }

  /// The uid client `i` joins as.
  public static func uid(of client: Int) -> UInt32 { UInt32(client + 1) }
}

extension Scenario where P == ChannelProfile {
  /// The channel client `i` joins.
  public func channel(of i: Int) -> String { ChannelProfile.channels[role[i]] }
}
