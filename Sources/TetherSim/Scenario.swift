// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// A direction of a client's link.
public enum LinkDirection: String, Sendable, CaseIterable {
  case uplink, downlink, both
}

/// One thing a scenario does at a planned instant: an app's call of the profile's, or
/// something done to the network or the server.
public enum ScenarioAction<Call: Sendable>: Sendable {
  case call(Call)
  /// Cuts a direction; healed `length` later, or never (nil).
  case cut(client: Int, LinkDirection, length: Interval?)
  case heal(client: Int, LinkDirection)
  /// Faulty conditions on a direction for `length`, then its clean conditions again.
  case faults(client: Int, LinkDirection, LinkConditions, length: Interval)
  case clean(client: Int, LinkDirection)
  case restartServer
}

/// A seeded random scenario of one profile: two to four clients through the real edge
/// server, thresholds scaled down by ten (the profile's, and the edge's: it forgets a
/// silent session, or ends a login's grace, at 3 s), the clean latency and jitter of each
/// client's link, and a plan of the app's calls, cuts of either direction or both, fault
/// phases (loss, duplicates, jitter that reorders, delay spikes) and server restarts, at
/// random instants around those thresholds (``SimProfile/plan``).
public struct Scenario<P: SimProfile>: Sendable {
  public var seed: UInt64
  public var config: P.Config
  public var clientCount: Int
  /// Which of the profile's names each client goes by: its channel
  /// (``ChannelProfile/channels``) or its user id (``LoginProfile/users``).
  public var role: [Int]
  /// The clean conditions of each client's link (both directions): a latency and jitter.
  public var clean: [LinkConditions]
  public var duration: Interval
  public var plan: [(at: Instant, action: ScenarioAction<P.Call>)]

  public static var scale: Double { 0.1 }

  /// The longest one-way delay of client `i`'s link while it is clean.
  public func cleanDelay(_ i: Int) -> Interval { clean[i].latency + clean[i].jitter }

  public static func generate(seed: UInt64) -> Scenario {
    let shape = P.plan
    var r = SeededRandom(seed: seed ^ shape.salt)
    let config = P.config(&r)
    let count = 2 + Int(r.next() % 3)
    let role = P.roles(count, &r)
    let clean = (0..<count).map { _ in
      LinkConditions(
        latency: .milliseconds(1 + r.next() % 20), jitter: .milliseconds(r.next() % 11))
    }
    let duration = Interval.milliseconds(shape.duration + r.next() % 4001)
    var plan = (0..<count).flatMap { P.opening($0, &r) }
    let thresholds = P.thresholds(config)
    func around(_ r: inout SeededRandom) -> Interval {
      let t = thresholds[Int(r.next() % UInt64(thresholds.count))]
      // 0.5 to 1.5 times the threshold, sometimes within a few ms of it.
      if r.next() % 4 == 0 { return .milliseconds(t - 5 + r.next() % 11) }
      return .milliseconds(t / 2 + r.next() % (t + 1))
    }
    /// One event: when, to whom, of a kind from `mix` (faults from `kinds`).
    func event(_ r: inout SeededRandom, _ mix: [PlanShape.EventKind], _ kinds: [FaultKind]) -> (
      at: Instant, action: ScenarioAction<P.Call>
    ) {
      let at = Instant.ms(shape.start + r.next() % (duration.nanoseconds / 1_000_000 - shape.start))
      let client = Int(r.next() % UInt64(count))
      let direction = LinkDirection.allCases[Int(r.next() % 3)]
      switch mix[Int(r.next() % UInt64(mix.count))] {
      case .cut:
        return (at, .cut(client: client, direction, length: r.next() % 12 == 0 ? nil : around(&r)))
      case .faults:
        var faults = LinkConditions(latency: clean[client].latency, jitter: clean[client].jitter)
        kinds[Int(r.next() % UInt64(kinds.count))].apply(to: &faults, &r)
        if r.next() % 3 == 0 { faults.loss = max(faults.loss, 0.2) }
        return (at, .faults(client: client, direction, faults, length: around(&r)))
      case .restartServer: return (at, .restartServer)
      case .other(let kind): return (at, P.event(kind, client: client, &r))
      }
    }
    let events = shape.events + Int(r.next() % shape.moreEvents)
    plan += (0..<events).map { _ in event(&r, shape.mix, shape.faults) }
    if let extra = shape.extra {
      // Up to two more, from their own generator: the events above stay what they were.
      var r = SeededRandom(seed: seed ^ extra.salt)
      plan += (0..<Int(r.next() % 3)).map { _ in event(&r, extra.mix, extra.faults) }
    }
    plan.sort { $0.at < $1.at }
    return Scenario(
      seed: seed, config: config, clientCount: count, role: role, clean: clean,
      duration: duration, plan: plan)
  }
}

/// How a profile's scenarios are drawn: the numbers a plan is made of.
public struct PlanShape: Sendable {
  /// Mixed into the seed: the plan's generator, and the app's choices during the run.
  public var salt: UInt64
  public var appSalt: UInt64
  /// The shortest duration (ms; up to 4 s more), and from when (ms) events are planned.
  public var duration: UInt64
  public var start: UInt64
  /// How many events at least, and up to how many more (exclusive).
  public var events: Int
  public var moreEvents: UInt64
  /// Each event draws one entry: the more entries of a kind, the likelier it is.
  public var mix: [EventKind]
  public var faults: [FaultKind]
  /// Events drawn after those, from a generator of their own (`salt` mixed into the seed).
  public var extra: (salt: UInt64, mix: [EventKind], faults: [FaultKind])? = nil

  public enum EventKind: Sendable {
    case cut, faults, restartServer
    /// One of the profile's own (``SimProfile/event(_:client:_:)``).
    case other(Int)
  }

  /// Each kind as many times as its weight, for ``mix``.
  public static func weighted(_ weights: KeyValuePairs<EventKind, Int>) -> [EventKind] {
    weights.flatMap { Array(repeating: $0.key, count: $0.value) }
  }
}

/// The faults of a fault phase: one kind each, drawn with its own strength.
public enum FaultKind: Sendable {
  case loss, duplicate, jitter, spike
  /// Copies that take different paths: a duplicate may come long after the first.
  case duplicateFar

  func apply(to faults: inout LinkConditions, _ r: inout SeededRandom) {
    switch self {
    case .loss: faults.loss = Double(1 + r.next() % 6) / 10
    case .duplicate: faults.duplicate = Double(1 + r.next() % 5) / 10
    case .duplicateFar:
      faults.duplicate = Double(2 + r.next() % 4) / 10
      faults.jitter = .milliseconds(100 + r.next() % 300)
    case .jitter: faults.jitter = .milliseconds(20 + r.next() % 200)
    case .spike:
      faults.spikeChance = Double(1 + r.next() % 3) / 10
      faults.spike = .milliseconds(50 + r.next() % 300)
    }
  }
}

extension ScenarioAction: CustomStringConvertible where Call: CustomStringConvertible {
  public var description: String {
    switch self {
    case .call(let call): "\(call)"
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
    }
  }
}
