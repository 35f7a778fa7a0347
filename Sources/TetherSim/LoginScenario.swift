import TetherCore
import TetherEdge

/// One thing a login scenario does at a planned instant.
public enum LoginAction: Sendable {
  /// The client logs in as its user; the token expires after `expiresIn` wall seconds.
  case login(client: Int, expiresIn: UInt64)
  case logout(client: Int)
  case join(client: Int, channel: Int)
  case leave(client: Int, channel: Int)
  /// renew_token with a fresh one-hour token.
  case renew(client: Int)
  case cut(client: Int, LinkDirection, length: Interval?)
  case heal(client: Int, LinkDirection)
  case faults(client: Int, LinkDirection, LinkConditions, length: Interval)
  case clean(client: Int, LinkDirection)
  case restartServer
  case networkChanged(client: Int)
  /// The operator kicks the user through the admin entry point, banning it for `ban` s.
  case kickUser(user: Int, ban: UInt32)
}

/// A seeded random login scenario: two to four clients logging in as one of three user ids
/// (so some share one: takeovers, RELOGINs kicked), joining and leaving two channels through
/// the real edge server, thresholds scaled by ten (heartbeat 100 ms, interrupted 400 ms,
/// login timeout 1 s, retry cap 800 ms; the edge's grace 3 s), with cuts shorter and longer
/// than the grace, fault phases, server restarts, kicks and bans, token renewals and
/// expiries.
public struct LoginScenario: Sendable {
  public var seed: UInt64
  public var config: LoginConfig
  public var edgeScale: Double
  public var clientCount: Int
  /// The user id index (into ``users``) of each client.
  public var userOf: [Int]
  public var clean: [LinkConditions]
  public var duration: Interval
  public var plan: [(at: Instant, action: LoginAction)]

  public static let scale = 0.1
  public static let users = ["alice", "bob", "carol"].map {
    try! UserID(validating: Array($0.utf8))
  }
  public static let channels = ["lobby", "room2"].map {
    try! ChannelName(validating: Array($0.utf8))
  }

  public func user(of client: Int) -> UserID { Self.users[userOf[client]] }

  public static func generate(seed: UInt64) -> LoginScenario {
    var r = SeededRandom(seed: seed ^ 0x1061_5CE7_A210_0000)
    var config = LoginConfig(appID: Fixture.appID)
    config.heartbeatInterval = .milliseconds(100)
    config.interruptedAfter = .milliseconds(400)
    config.loginTimeout = .milliseconds(1000)
    config.retry = RetryPolicy(base: .milliseconds(50), cap: .milliseconds(800))
    let count = 2 + Int(r.next() % 3)
    let userOf = (0..<count).map { _ in Int(r.next() % 3) }
    let clean = (0..<count).map { _ in
      LinkConditions(
        latency: .milliseconds(1 + r.next() % 20), jitter: .milliseconds(r.next() % 11))
    }
    let duration = Interval.milliseconds(7000 + r.next() % 4001)
    var plan: [(at: Instant, action: LoginAction)] = []
    for i in 0..<count {
      let at = r.next() % 800
      plan.append(
        (.ms(at), .login(client: i, expiresIn: r.next() % 6 == 0 ? 3 + r.next() % 6 : 3600)))
      for channel in 0..<2 where r.next() % 3 != 0 {
        plan.append((.ms(at + r.next() % 400), .join(client: i, channel: channel)))
      }
    }
    // Around the client's thresholds and the edge's grace (3 s).
    let thresholds: [UInt64] = [100, 400, 1000, 3000, 3000]
    func around(_ r: inout SeededRandom) -> Interval {
      let t = thresholds[Int(r.next() % UInt64(thresholds.count))]
      if r.next() % 4 == 0 { return .milliseconds(t - 5 + r.next() % 11) }
      return .milliseconds(t / 2 + r.next() % (t + 1))
    }
    let events = 8 + Int(r.next() % 12)
    for _ in 0..<events {
      let at = Instant.ms(800 + r.next() % (duration.nanoseconds / 1_000_000 - 800))
      let client = Int(r.next() % UInt64(count))
      let direction = LinkDirection.allCases[Int(r.next() % 3)]
      let action: LoginAction
      switch r.next() % 24 {
      case 0..<6:
        action = .cut(client: client, direction, length: r.next() % 12 == 0 ? nil : around(&r))
      case 6..<9:
        var faults = LinkConditions(latency: clean[client].latency, jitter: clean[client].jitter)
        switch r.next() % 5 {
        case 0: faults.loss = Double(1 + r.next() % 6) / 10
        case 1: faults.duplicate = Double(1 + r.next() % 5) / 10
        case 2:
          // Copies that take different paths: a duplicate may come long after the first.
          faults.duplicate = Double(2 + r.next() % 4) / 10
          faults.jitter = .milliseconds(100 + r.next() % 300)
        case 3: faults.jitter = .milliseconds(20 + r.next() % 200)
        default:
          faults.spikeChance = Double(1 + r.next() % 3) / 10
          faults.spike = .milliseconds(50 + r.next() % 300)
        }
        if r.next() % 3 == 0 { faults.loss = max(faults.loss, 0.2) }
        action = .faults(client: client, direction, faults, length: around(&r))
      case 9, 10: action = .join(client: client, channel: Int(r.next() % 2))
      case 11, 12: action = .leave(client: client, channel: Int(r.next() % 2))
      case 13, 14: action = .login(client: client, expiresIn: r.next() % 5 == 0 ? 4 : 3600)
      case 15, 16: action = .logout(client: client)
      case 17: action = .renew(client: client)
      case 18: action = .restartServer
      case 19: action = .networkChanged(client: client)
      case 20:
        action = .kickUser(
          user: Int(r.next() % 3), ban: r.next() % 2 == 0 ? 0 : 1 + UInt32(r.next() % 3))
      default: action = .cut(client: client, .both, length: .milliseconds(3000 + r.next() % 1500))
      }
      plan.append((at, action))
    }
    plan.sort { $0.at < $1.at }
    return LoginScenario(
      seed: seed, config: config, edgeScale: scale, clientCount: count, userOf: userOf,
      clean: clean, duration: duration, plan: plan)
  }
}

extension LoginAction: CustomStringConvertible {
  public var description: String {
    func name(_ c: Int) -> String {
      String(decoding: LoginScenario.channels[c].bytes, as: UTF8.self)
    }
    switch self {
    case .login(let c, let e): return "client \(c) logs in (token for \(e) s)"
    case .logout(let c): return "client \(c) logs out"
    case .join(let c, let ch): return "client \(c) joins \(name(ch))"
    case .leave(let c, let ch): return "client \(c) leaves \(name(ch))"
    case .renew(let c): return "client \(c) renews its token"
    case .cut(let c, let d, let length):
      return "cut \(d.rawValue) of client \(c) "
        + (length.map { "for \(SimClock.text(.zero + $0))" } ?? "for ever")
    case .heal(let c, let d): return "heal \(d.rawValue) of client \(c)"
    case .faults(let c, let d, let f, let length):
      return "faults on \(d.rawValue) of client \(c) for \(SimClock.text(.zero + length)): "
        + "loss \(f.loss), dup \(f.duplicate), jitter \(f.jitter.nanoseconds / 1_000_000) ms, "
        + "spikes \(f.spikeChance) of \(f.spike.nanoseconds / 1_000_000) ms"
    case .clean(let c, let d): return "clean \(d.rawValue) of client \(c)"
    case .restartServer: return "restart the server"
    case .networkChanged(let c): return "client \(c): network changed"
    case .kickUser(let u, let ban):
      return "admin kicks \(String(decoding: LoginScenario.users[u].bytes, as: UTF8.self))"
        + (ban > 0 ? " and bans it for \(ban) s" : "")
    }
  }
}

/// Counts over one or many login scenarios.
public struct LoginScenarioStats: Sendable {
  public var scenarios = 0
  public var steps: UInt64 = 0
  public var checks: UInt64 = 0
  public var network = NetworkCounters()
  public var staleEpochDropped: UInt64 = 0
  public var staleEpochUplinkDropped: UInt64 = 0
  public var lateAcceptsDropped: UInt64 = 0
  public var logins: UInt64 = 0
  public var logouts: UInt64 = 0
  public var channelCalls: UInt64 = 0
  public var renewals: UInt64 = 0
  public var kicks: UInt64 = 0
  public var restarts: UInt64 = 0
  public var cuts: UInt64 = 0
  public var faultPhases: UInt64 = 0
  public var connected: UInt64 = 0
  public var resumed: UInt64 = 0
  public var remoteLogins: UInt64 = 0
  public var banned: UInt64 = 0
  public var tokenExpired: UInt64 = 0
  public var memberEvents: UInt64 = 0
  /// Member events checked against the previous one of their (channel, user).
  public var alternations: UInt64 = 0
  /// Member events from a server session the checker's boundaries no longer cover.
  public var unchecked: UInt64 = 0
  /// End-phase agreements: a client's channels, or a view of a member, against the server.
  public var agreements: UInt64 = 0

  public init() {}

  public mutating func add(_ o: LoginScenarioStats) {
    scenarios += o.scenarios
    steps += o.steps
    checks += o.checks
    network += o.network
    staleEpochDropped += o.staleEpochDropped
    staleEpochUplinkDropped += o.staleEpochUplinkDropped
    lateAcceptsDropped += o.lateAcceptsDropped
    logins += o.logins
    logouts += o.logouts
    channelCalls += o.channelCalls
    renewals += o.renewals
    kicks += o.kicks
    restarts += o.restarts
    cuts += o.cuts
    faultPhases += o.faultPhases
    connected += o.connected
    resumed += o.resumed
    remoteLogins += o.remoteLogins
    banned += o.banned
    tokenExpired += o.tokenExpired
    memberEvents += o.memberEvents
    alternations += o.alternations
    unchecked += o.unchecked
    agreements += o.agreements
  }

  public var summary: String {
    let n = network
    return "\(scenarios) login scenarios, \(steps) steps, \(checks) invariant checks "
      + "(\(alternations) member-event alternations, \(agreements) end agreements, "
      + "\(unchecked) events unchecked); "
      + "calls: \(logins) logins, \(logouts) logouts, \(channelCalls) joins/leaves, "
      + "\(renewals) renewals, \(kicks) admin kicks; outcomes: \(connected) CONNECTED, "
      + "\(resumed) resumed, \(remoteLogins) REMOTE_LOGIN, \(banned) BANNED, "
      + "\(tokenExpired) token-expired, \(memberEvents) member events; "
      + "faults: \(cuts) cuts, \(faultPhases) fault phases, \(restarts) server restarts, "
      + "\(n.lost) lost, \(n.cut) dropped by cuts, \(n.duplicated) duplicated, "
      + "\(n.reordered) reordered, \(n.spiked) spikes (of \(n.sent) sent); "
      + "set aside (--set-aside-late only): \(staleEpochDropped) late MEMBER_EVENTS/CHANNEL_ACK, "
      + "\(staleEpochUplinkDropped) late LOGIN_HEARTBEAT/CHANNEL_OPERATION, "
      + "\(lateAcceptsDropped) late LOGIN_ACCEPT of the session held"
  }
}

public enum LoginScenarioBatch {
  public static func run(
    seeds: Range<UInt64>, stats: inout LoginScenarioStats, dropsLateSessionDatagrams: Bool = false
  ) -> (seed: UInt64, violation: Violation)? {
    for seed in seeds {
      var run = LoginScenarioRun(
        LoginScenario.generate(seed: seed), dropsLateSessionDatagrams: dropsLateSessionDatagrams)
      do throws(Violation) {
        try run.run()
      } catch {
        stats.add(run.stats)
        return (seed, error)
      }
      stats.add(run.stats)
    }
    return nil
  }
}
