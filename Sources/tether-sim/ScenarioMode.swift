import Dispatch
import Glibc
import Synchronization
import TetherCore
import TetherSim

/// `tether-sim --scenarios N [--seed S] [--seconds T] [--jobs J]`: seeded random scenarios
/// S, S+1, ... (N of them, or as many as fit in T seconds when N is 0), each checked
/// against the invariants after every step; a one-line summary, or the first failure with
/// its seed and the command that replays it.
/// `tether-sim --replay SEED`: one scenario, its plan and its trace.
enum ScenarioMode {
  struct Options {
    var scenarios: UInt64 = 0
    var seed: UInt64 = 1
    var seconds: Double?
    var jobs = 1
    var replay: UInt64?
    /// The login profile's scenarios (LoginMode.swift).
    var login = false
    /// With --login: deliver the late datagrams of another server session instead of
    /// setting them aside (the known missing session epoch).
    var setAsideLate = false
  }

  static func parse(_ arguments: [String]) -> Options? {
    var options = Options()
    var index = 1
    var any = false
    while index < arguments.count {
      let flag = arguments[index]
      if flag == "--login" || flag == "--set-aside-late" {
        if flag == "--login" { options.login = true } else { options.setAsideLate = true }
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

  static func replayCommand(_ seed: UInt64) -> String {
    "make sim-replay SEED=\(seed)   (or: swift run -c release tether-sim --replay \(seed))"
  }

  static func main(_ options: Options) -> Int32 {
    if options.login { return LoginMode.main(options) }
    if let seed = options.replay { return replay(seed) }
    return batch(options)
  }

  static func replay(_ seed: UInt64) -> Int32 {
    let scenario = Scenario.generate(seed: seed)
    print("scenario \(seed): \(scenario.clientCount) clients, channels \(scenario.channels)")
    let c = scenario.config
    print(
      "thresholds: heartbeat \(c.heartbeatInterval.nanoseconds / 1_000_000) ms, interrupted "
        + "\(c.interruptedAfter.nanoseconds / 1_000_000) ms, lost \(c.lostAfter.nanoseconds / 1_000_000) ms, "
        + "remote offline \(c.remoteOfflineAfter.nanoseconds / 1_000_000) ms, give up "
        + "\(c.giveUpAfter.nanoseconds / 1_000_000) ms, retry cap \(c.retry.cap.nanoseconds / 1_000_000) ms; "
        + "edge time scale \(scenario.edgeScale)")
    for (i, link) in scenario.clean.enumerated() {
      print(
        "client \(i): uid \(scenario.uid(of: i)), latency \(link.latency.nanoseconds / 1_000_000) ms "
          + "+ jitter up to \(link.jitter.nanoseconds / 1_000_000) ms each way")
    }
    print("plan:")
    for (at, action) in scenario.plan { print("  \(SimClock.text(at))  \(action)") }
    print("trace:")
    var run = ScenarioRun(scenario, tracing: true)
    var failure: Violation?
    do throws(Violation) { try run.run() } catch { failure = error }
    for line in run.trace { print("  " + line) }
    print(run.stats.summary)
    if let failure {
      print("FAILED: \(failure)")
      return 1
    }
    print("scenario \(seed): every invariant held")
    return 0
  }

  struct Progress {
    var stats = ScenarioStats()
    var next: UInt64
    var failure: (seed: UInt64, violation: Violation)?
  }

  static func batch(_ options: Options) -> Int32 {
    let clock = ContinuousClock()
    let start = clock.now
    let deadline = options.seconds.map { start + .milliseconds(Int64($0 * 1000)) }
    let end = options.scenarios == 0 ? UInt64.max : options.seed &+ options.scenarios
    let progress = Mutex(Progress(next: options.seed))
    let chunk: UInt64 = 50
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
        let failure = ScenarioBatch.run(seeds: range, stats: &stats)
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
    print(
      "tether-sim: \(result.stats.summary); in \(tenths / 10).\(tenths % 10) s "
        + "(\(Int(rate)) scenarios/s, \(options.jobs) job\(options.jobs == 1 ? "" : "s"))")
    if let failure = result.failure {
      print("tether-sim: FAILED at seed \(failure.seed): \(failure.violation)")
      print("replay: \(replayCommand(failure.seed))")
      return 1
    }
    return 0
  }
}
