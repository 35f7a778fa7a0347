import Dispatch
import Synchronization
import TetherCore
import TetherSim

/// `tether-sim --login --scenarios N [--seed S] [--seconds T] [--jobs J]`: seeded random
/// login scenarios (LoginScenario.swift) against their invariants; `--login --replay SEED`:
/// one of them, its plan and its trace. Late datagrams of another server session are
/// delivered (the client tells them apart by the server-session number);
/// `--set-aside-late` sets them aside instead, as runs did before the number existed.
enum LoginMode {
  static func replayCommand(_ seed: UInt64, setAsideLate: Bool) -> String {
    setAsideLate
      ? "swift run -c release tether-sim --login --set-aside-late --replay \(seed)"
      : "make sim-replay LOGIN=1 SEED=\(seed)   (or: swift run -c release tether-sim --login --replay \(seed))"
  }

  static func main(_ options: ScenarioMode.Options) -> Int32 {
    if let seed = options.replay { return replay(seed, options) }
    return batch(options)
  }

  static func replay(_ seed: UInt64, _ options: ScenarioMode.Options) -> Int32 {
    let scenario = LoginScenario.generate(seed: seed)
    print(
      "login scenario \(seed): \(scenario.clientCount) clients, edge time scale \(scenario.edgeScale)"
    )
    for i in 0..<scenario.clientCount {
      let link = scenario.clean[i]
      print(
        "client \(i): user \(String(decoding: scenario.user(of: i).bytes, as: UTF8.self)), latency "
          + "\(link.latency.nanoseconds / 1_000_000) ms + jitter up to \(link.jitter.nanoseconds / 1_000_000) ms each way"
      )
    }
    print("plan:")
    for (at, action) in scenario.plan { print("  \(SimClock.text(at))  \(action)") }
    print("trace:")
    var run = LoginScenarioRun(
      scenario, tracing: true, dropsLateSessionDatagrams: options.setAsideLate)
    var failure: Violation?
    do throws(Violation) { try run.run() } catch { failure = error }
    for line in run.trace { print("  " + line) }
    print(run.stats.summary)
    if let failure {
      print("FAILED: \(failure)")
      return 1
    }
    print("login scenario \(seed): every invariant held")
    return 0
  }

  struct Progress {
    var stats = LoginScenarioStats()
    var next: UInt64
    var failure: (seed: UInt64, violation: Violation)?
  }

  static func batch(_ options: ScenarioMode.Options) -> Int32 {
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
        var stats = LoginScenarioStats()
        let failure = LoginScenarioBatch.run(
          seeds: range, stats: &stats, dropsLateSessionDatagrams: options.setAsideLate)
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
      "tether-sim --login: \(result.stats.summary); in \(tenths / 10).\(tenths % 10) s "
        + "(\(Int(rate)) scenarios/s, \(options.jobs) job\(options.jobs == 1 ? "" : "s"))")
    if let failure = result.failure {
      print("tether-sim --login: FAILED at seed \(failure.seed): \(failure.violation)")
      print("replay: \(replayCommand(failure.seed, setAsideLate: options.setAsideLate))")
      return 1
    }
    return 0
  }
}
