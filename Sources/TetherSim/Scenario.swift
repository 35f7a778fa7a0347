import TetherCore
import TetherEdge

/// A direction of a client's link.
public enum LinkDirection: String, Sendable, CaseIterable {
  case uplink, downlink, both
}

/// One thing a scenario does at a planned instant.
public enum ScenarioAction: Sendable {
  /// The client calls join_channel; its token expires after `expiresIn` wall seconds
  /// (nil: an hour).
  case join(client: Int, expiresIn: UInt64?)
  case leave(client: Int)
  /// renew_token with a fresh one-hour token.
  case renew(client: Int)
  /// Cuts a direction; healed `length` later, or never (nil).
  case cut(client: Int, LinkDirection, length: Interval?)
  case heal(client: Int, LinkDirection)
  /// Faulty conditions on a direction for `length`, then its clean conditions again.
  case faults(client: Int, LinkDirection, LinkConditions, length: Interval)
  case clean(client: Int, LinkDirection)
  case restartServer
  /// The device's address changed (the app says so, or the driver saw it).
  case networkChanged(client: Int, byUser: Bool)
}

/// A seeded random scenario: a few clients in one or two channels through the real edge
/// server, thresholds scaled down by ten (heartbeat 100 ms, interrupted 400 ms, lost 1 s,
/// remote offline 2 s, edge forgets at 3 s), and a plan of joins, leaves, renewals, cuts of
/// either direction or both, fault phases (loss, duplicates, jitter that reorders, delay
/// spikes) and server restarts, at random instants around those thresholds.
public struct Scenario: Sendable {
  public var seed: UInt64
  public var config: ChannelConfig
  public var edgeScale: Double
  public var clientCount: Int
  public var channels: [String]
  /// The clean conditions of each client's link (both directions): a latency and jitter.
  public var clean: [LinkConditions]
  public var duration: Interval
  public var plan: [(at: Instant, action: ScenarioAction)]

  public static let scale = 0.1

  public func uid(of client: Int) -> UInt32 { UInt32(client + 1) }

  /// The longest one-way delay of client `i`'s link while it is clean.
  public func cleanDelay(_ i: Int) -> Interval { clean[i].latency + clean[i].jitter }

  public static func generate(seed: UInt64) -> Scenario {
    var r = SeededRandom(seed: seed ^ 0x5EED_5CE7_A210_0000)
    var config = ChannelConfig(appID: Fixture.appID)
    config.heartbeatInterval = .milliseconds(100)
    config.interruptedAfter = .milliseconds(400)
    config.lostAfter = .milliseconds(1000)
    config.remoteOfflineAfter = .milliseconds(2000)
    config.giveUpAfter =
      [.milliseconds(3000), .milliseconds(5000), .milliseconds(8000)][
        Int(r.next() % 3)]
    config.tokenWillExpireBefore = .milliseconds(3000)
    config.retry = RetryPolicy(base: .milliseconds(50), cap: .milliseconds(800))
    let count = 2 + Int(r.next() % 3)
    let channels = (0..<count).map { i in i == 3 && r.next() % 2 == 0 ? "room2" : "lobby" }
    let clean = (0..<count).map { _ in
      LinkConditions(
        latency: .milliseconds(1 + r.next() % 20), jitter: .milliseconds(r.next() % 11))
    }
    let duration = Interval.milliseconds(8000 + r.next() % 4001)
    var plan: [(at: Instant, action: ScenarioAction)] = []
    for i in 0..<count {
      let expiring = r.next() % 5 == 0
      plan.append(
        (
          .ms(r.next() % 1000),
          .join(client: i, expiresIn: expiring ? 2 + r.next() % 7 : nil)
        ))
    }
    let thresholds: [UInt64] = [
      100, 400, 1000, 2000, 3000, config.giveUpAfter.nanoseconds / 1_000_000,
    ]
    func around(_ r: inout SeededRandom) -> Interval {
      let t = thresholds[Int(r.next() % UInt64(thresholds.count))]
      // 0.5 to 1.5 times the threshold, sometimes within a few ms of it.
      if r.next() % 4 == 0 { return .milliseconds(t - 5 + r.next() % 11) }
      return .milliseconds(t / 2 + r.next() % (t + 1))
    }
    let events = 6 + Int(r.next() % 10)
    for _ in 0..<events {
      let at = Instant.ms(1000 + r.next() % (duration.nanoseconds / 1_000_000 - 1000))
      let client = Int(r.next() % UInt64(count))
      let direction = LinkDirection.allCases[Int(r.next() % 3)]
      let action: ScenarioAction
      switch r.next() % 20 {
      case 0..<7:
        action = .cut(client: client, direction, length: r.next() % 12 == 0 ? nil : around(&r))
      case 7..<11:
        var faults = LinkConditions(latency: clean[client].latency, jitter: clean[client].jitter)
        switch r.next() % 4 {
        case 0: faults.loss = Double(1 + r.next() % 6) / 10
        case 1: faults.duplicate = Double(1 + r.next() % 5) / 10
        case 2: faults.jitter = .milliseconds(20 + r.next() % 200)
        default:
          faults.spikeChance = Double(1 + r.next() % 3) / 10
          faults.spike = .milliseconds(50 + r.next() % 300)
        }
        if r.next() % 3 == 0 { faults.loss = max(faults.loss, 0.2) }
        action = .faults(client: client, direction, faults, length: around(&r))
      case 11, 12: action = .leave(client: client)
      case 13, 14: action = .join(client: client, expiresIn: r.next() % 4 == 0 ? 3 : nil)
      case 15, 16: action = .renew(client: client)
      case 17: action = .restartServer
      default: action = .networkChanged(client: client, byUser: r.next() % 2 == 0)
      }
      plan.append((at, action))
    }
    plan.sort { $0.at < $1.at }
    return Scenario(
      seed: seed, config: config, edgeScale: scale, clientCount: count, channels: channels,
      clean: clean, duration: duration, plan: plan)
  }
}

extension ScenarioAction: CustomStringConvertible {
  public var description: String {
    switch self {
    case .join(let c, let expiresIn):
      "client \(c) joins" + (expiresIn.map { " (token expires in \($0) s)" } ?? "")
    case .leave(let c): "client \(c) leaves"
    case .renew(let c): "client \(c) renews its token"
    case .cut(let c, let d, let length):
      "cut \(d.rawValue) of client \(c) "
        + (length.map { "for \(SimClock.text(.zero + $0))" } ?? "for ever")
    case .heal(let c, let d): "heal \(d.rawValue) of client \(c)"
    case .faults(let c, let d, let f, let length):
      "faults on \(d.rawValue) of client \(c) for \(SimClock.text(.zero + length)): loss \(f.loss), "
        + "dup \(f.duplicate), jitter \(f.jitter.nanoseconds / 1_000_000) ms, "
        + "spikes \(f.spikeChance) of \(f.spike.nanoseconds / 1_000_000) ms"
    case .clean(let c, let d): "clean \(d.rawValue) of client \(c)"
    case .restartServer: "restart the server"
    case .networkChanged(let c, let byUser):
      "client \(c): network changed" + (byUser ? " (app)" : "")
    }
  }
}
