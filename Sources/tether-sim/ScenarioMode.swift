// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Synchronization
import TetherCore
import TetherSim

/// `tether-sim [--login] --scenarios N [--seed S] [--seconds T] [--jobs J]`: seeded random
/// scenarios S, S+1, ... of the channel profile (of the login profile with `--login`), N
/// of them, or as many as fit in T seconds when N is 0, each checked against its
/// invariants after every step; a one-line summary, or the first failure with its seed and
/// the command that replays it. `tether-sim [--login] --replay SEED`: one scenario, its plan
/// and its trace. Late datagrams of another login server session are delivered (the client
/// tells them apart by the server-session number); `--set-aside-late` sets them aside
/// instead, as runs did before the number existed. `--attack-edge`: the attacker on every
/// client's path also sends the edge the clients' own datagrams again (``Attacker``).
enum ScenarioMode {
  struct Options {
    var scenarios: UInt64 = 0
    var seed: UInt64 = 1
    var seconds: Double?
    var jobs = 1
    var replay: UInt64?
    /// The login profile's scenarios.
    var login = false
    var setAsideLate = false
    /// The attacker also sends the edge (``Attacker/attacksEdge``).
    var attackEdge = false
  }

  static func parse(_ arguments: [String]) -> Options? {
    var options = Options()
    var index = 1
    var any = false
    while index < arguments.count {
      let flag = arguments[index]
      if flag == "--login" || flag == "--set-aside-late" || flag == "--attack-edge" {
        switch flag {
        case "--login": options.login = true
        case "--attack-edge": options.attackEdge = true
        default: options.setAsideLate = true
        }
        index += 1
        continue
      }
      guard index + 1 < arguments.count else { return nil }
      let value = arguments[index + 1]
      switch flag {
      case "--scenarios": options.scenarios = UInt64(value) ?? 0
      case "--seed": options.seed = UInt64(value) ?? 1
      case "--seconds": options.seconds = Double(value)
      case "--jobs": options.jobs = max(1, Int(value) ?? 1)
      case "--replay": options.replay = UInt64(value)
      default: return nil
      }
      any = true
      index += 2
    }
    return any ? options : nil
  }

  static func main(_ options: Options) -> Int32 {
    options.login ? main(LoginProfile.self, options) : main(ChannelProfile.self, options)
  }

  static func main<P: SimProfile>(_: P.Type, _ options: Options) -> Int32 {
    options.replay.map { replay(P.self, $0, options) } ?? batch(P.self, options)
  }

  static func replayCommand(_ seed: UInt64, _ options: Options) -> String {
    if options.setAsideLate || options.attackEdge {
      let flags =
        (options.login ? " --login" : "") + (options.setAsideLate ? " --set-aside-late" : "")
        + (options.attackEdge ? " --attack-edge" : "")
      return "swift run -c release tether-sim\(flags) --replay \(seed)"
    }
    let login = options.login ? " --login" : ""
    return "make sim-replay\(options.login ? " LOGIN=1" : "") SEED=\(seed)   "
      + "(or: swift run -c release tether-sim\(login) --replay \(seed))"
  }

  static func replay<P: SimProfile>(_: P.Type, _ seed: UInt64, _ options: Options) -> Int32 {
    let scenario = Scenario<P>.generate(seed: seed)
    print(
      "\(P.noun) \(seed): \(scenario.clientCount) clients, edge time scale \(Scenario<P>.scale)")
    for (i, link) in scenario.clean.enumerated() {
      print(
        "client \(i): \(P.name(of: i, in: scenario)), latency \(link.latency.nanoseconds / 1_000_000) "
          + "ms + jitter up to \(link.jitter.nanoseconds / 1_000_000) ms each way")
    }
    print("plan:")
    for (at, action) in scenario.plan { print("  \(SimClock.text(at))  \(action)") }
    print("trace:")
    var run = ScenarioRun(
      scenario, tracing: true, setsAsideLate: options.setAsideLate,
      attacksEdge: options.attackEdge)
    var failure: Violation?
    do throws(Violation) { try run.run() } catch { failure = error }
    for line in run.trace { print("  " + line) }
    print(run.stats.summary(P.noun))
    if let failure {
      print("FAILED: \(failure)")
      return 1
    }
    print("\(P.noun) \(seed): every invariant held")
    return 0
  }

  struct Progress {
    var stats = ScenarioStats()
    var next: UInt64
    var failure: (seed: UInt64, violation: Violation)?
  }

  static func batch<P: SimProfile>(_: P.Type, _ options: Options) -> Int32 {
    let clock = ContinuousClock()
    let start = clock.now
    let deadline = options.seconds.map { start + .milliseconds(Int64($0 * 1000)) }
    let end = options.scenarios == 0 ? UInt64.max : options.seed &+ options.scenarios
    let progress = Mutex(Progress(next: options.seed))
    let chunk: UInt64 = 20
    DispatchQueue.concurrentPerform(iterations: options.jobs) { _ in
      while true {
        let range: Range<UInt64>? = progress.withLock { p in
          guard p.failure == nil, p.next < end else { return nil }
          if let deadline, clock.now >= deadline { return nil }
          let first = p.next
          p.next = min(end, first &+ chunk)
          return first..<p.next
        }
        guard let range else { return }
        var stats = ScenarioStats()
        let failure = P.batch(
          seeds: range, stats: &stats, setsAsideLate: options.setAsideLate,
          attacksEdge: options.attackEdge)
        progress.withLock { p in
          p.stats.add(stats)
          if let failure, p.failure.map({ failure.seed < $0.seed }) ?? true { p.failure = failure }
        }
      }
    }
    let elapsed = clock.now - start
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let result = progress.withLock { $0 }
    let rate = Double(result.stats.scenarios) / max(seconds, 0.001)
    let tenths = Int(seconds * 10)
    let name = "tether-sim" + (options.login ? " --login" : "")
    print(
      "\(name): \(result.stats.summary(P.noun)); in \(tenths / 10).\(tenths % 10) s "
        + "(\(Int(rate)) scenarios/s, \(options.jobs) job\(options.jobs == 1 ? "" : "s"))")
    if let failure = result.failure {
      print("\(name): FAILED at seed \(failure.seed): \(failure.violation)")
      print("replay: \(replayCommand(failure.seed, options))")
      return 1
    }
    return 0
  }
}
