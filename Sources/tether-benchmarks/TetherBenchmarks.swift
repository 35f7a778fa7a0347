// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TetherCore
import TetherEdge
import TetherLab

/// `make bench`: the core's own costs, then `tether-bench` through a relay to a real
/// `tether-edge` (tokens per session, minted here by the edge's own minter), the targets
/// checked, and docs/BENCHMARKS.md rewritten from the run.
@main
struct TetherBenchmarks: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tether-benchmarks",
    abstract: "Runs Tether's benchmarks against tether-edge and writes the report.")

  @Option(help: "The tether-bench program (make bench-binary).") var bench: String
  @Option(help: "The tether-edge program.") var edge: String
  @Option(help: "The edge-load program (make bench-binary); without it, no edge capacity.")
  var edgeLoad: String?
  @Option(help: "The C device example (examples/device); without it, no fleet rows.")
  var device: String?
  @Option(help: "Where the raw results go.") var out = "build/bench/results"
  @Option(help: "Rewrite this file with the report (docs/BENCHMARKS.md).") var docs: String?
  @Option(help: "A markdown file with the size table (make sizes).") var sizes: String?
  @Option(
    help:
      "A markdown section, appended as it is: the emulated PREEMPT_RT kernel's run (make bench-vm-rt)."
  )
  var vmRt: String?
  @Option(help: "The plot the report shows, relative to the report.") var plot: String?
  @Option(help: "Rewrite the real-time result between this file's markers (README.md).")
  var readme: String?
  @Flag(help: "Seconds long: checks that every part runs and reports; asserts no timing.")
  var smoke = false
  @Flag(help: "make bench-quick: the same rows in small, under two minutes.")
  var quick = false
  @Option(help: "The loop thread's priorities, each a set of rows (tether-bench --priority).")
  var priorities = "default,fifo:10"
  @Option(help: "Runs of each row; every figure is their median.") var runs = 3
  @Flag(
    help:
      "Keep the timer rows and costs already in --out's results.txt; measure the scale rows and the edge again, then report."
  )
  var keepTimerRows = false
  @Flag(
    help:
      "Keep every row already in --out's results.txt (timer and scale rows); measure the edge's capacity and the fleet's rows again, then report."
  )
  var keepRows = false
  @Option(
    help:
      "Only an edge joining a fleet of this many member records (FleetMirror): its paragraph on stdout."
  )
  var fleetMirror: Int?

  static let appID = "bench-app"
  static let certificate = "bench-certificate"

  /// What tether-bench runs: the whole matrix, or less of it.
  struct Plan {
    var sessions: [Int]
    var loads: [String]
    var patterns: [String]
    var priorities: String
    var runs: Int
    var quick: Bool

    /// The rows one run of tether-bench reports: per scenario and priority, the two
    /// baselines, each design's heartbeats window and its churn window per pattern.
    func rowCount(designs: Int = 3) -> Int {
      sessions.count * loads.count * priorities.split(separator: ",").count
        * (2 + designs * (1 + patterns.count))
    }
  }

  var plan: Plan {
    if smoke {
      // Both priorities, two runs (a median and a range), every window and pattern: every
      // row kind and key, in seconds. FIFO may be refused here: the rows then say so.
      return Plan(
        sessions: [20], loads: ["idle"], patterns: ["steady", "burst"],
        priorities: "default,fifo:1", runs: 2, quick: true)
    }
    if quick {
      return Plan(
        sessions: [1, 50], loads: ["idle", "busy"], patterns: ["steady"],
        priorities: priorities, runs: runs, quick: true)
    }
    return Plan(
      sessions: [1, 1_000, 10_000], loads: ["idle", "busy"], patterns: ["steady", "burst"],
      priorities: priorities, runs: runs, quick: false)
  }

  func run() throws {
    if let records = fleetMirror {
      print(try FleetMirror.measure(edge: edge, records: records).paragraph)
      return
    }
    let started = Date()
    let small = smoke || quick
    let core = CoreCosts.measure(
      iterations: small ? 100_000 : 10_000_000, sessions: small ? 1_000 : 100_000)
    print(
      "core: \(Target.format(core.refreshNanoseconds)) ns per activity refresh, "
        + "\(Target.format(core.datagramNanoseconds)) ns per ack from its bytes, "
        + "\(Target.format(core.bytesPerSession)) B per session at \(core.sessions)")
    let secure = try SecureCosts.measure(
      datagrams: small ? 10_000 : 1_000_000, handshakes: small ? 20 : 2_000)
    print(
      "v2: \(Target.format(secure.sealNanoseconds)) ns per DATA sealed, "
        + "\(Target.format(secure.openNanoseconds)) ns opened, "
        + "\(Target.format(secure.deviceHandshakeMicroseconds)) us per handshake on the device, "
        + "\(Target.format(secure.edgeHandshakeMicroseconds)) us on the edge")
    Self.runAtDefaultPolicy()
    let plan = self.plan
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    if keepTimerRows || keepRows {
      // The timer rows of the last run stay; its scale rows go, to be measured again
      // (--keep-rows: they stay too).
      let path = out + "/results.txt"
      let kept = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        .filter { keepRows || !$0.hasPrefix("scale ") }
      try (kept.joined(separator: "\n") + "\n").write(
        toFile: path, atomically: true, encoding: .utf8)
    } else {
      for file in (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
      where file == "results.txt" || file.hasPrefix("samples-") {
        try? FileManager.default.removeItem(atPath: out + "/" + file)
      }
      try runTimerRows(plan)
    }
    if !keepRows {
      try Scale.measure(bench: bench, edge: edge, out: out, small: small, runs: plan.runs)
    }
    // After tether-bench, so that it has the machine to itself.
    let capacity = try edgeLoad.map { load in
      let tokens = out + "/edge-load-tokens.txt"
      try Self.writeTokens(count: 64, to: tokens)
      return try EdgeCapacity.measure(
        load: load, edge: edge, appID: Self.appID, certificate: Self.certificate, tokens: tokens,
        seconds: small ? 0.5 : 5, runs: small ? 1 : plan.runs)
    }
    let fleet = try device.map { device in
      var rows = try FleetRows.measure(edge: edge, device: device, joins: small ? 4 : 40)
      if let load = edgeLoad {
        let nats = try NatsServerProcess.started()
        defer { nats.remove() }
        rows.capacityOn = try EdgeCapacity.measure(
          load: load, edge: edge, appID: Self.appID, certificate: Self.certificate,
          tokens: out + "/edge-load-tokens.txt", seconds: small ? 0.5 : 5,
          runs: small ? 1 : plan.runs,
          edgeArguments: ["--fleet", nats.url, "--edge-id", "capacity"])
      }
      rows.mirror = try FleetMirror.measure(edge: edge, records: small ? 2_000 : 100_000)
      print(rows.summary)
      return rows
    }
    try finish(
      started: started, core: core, secure: secure, capacity: capacity, fleet: fleet, plan: plan)
  }

  /// tether-bench's timer matrix through a relay to a tether-edge of its own, into `out`.
  func runTimerRows(_ plan: Plan) throws {
    let tokens = out + "/tokens.txt"
    try Self.writeTokens(count: plan.sessions.max() ?? 1, to: tokens)
    let server = try EdgeProcess(
      binary: edge, appID: Self.appID, certificate: Self.certificate, timeScale: 1,
      // tether-bench joins thousands of sessions from one address: no join limit for it.
      extraArguments: ["--max-sessions", "40000", "--join-burst", "1000000"])
    defer { server.stop() }
    var arguments = [
      "--edge", server.address, "--tokens", tokens, "--app-id", Self.appID, "--out", out,
      "--sessions", plan.sessions.map(String.init).joined(separator: ","),
      "--loads", plan.loads.joined(separator: ","),
      "--patterns", plan.patterns.joined(separator: ","), "--priority", plan.priorities,
      "--runs", String(plan.runs), "--cost",
    ]
    if let pid = server.pid { arguments += ["--edge-pid", String(pid)] }
    if plan.quick { arguments.append("--quick") }
    try Self.runToTerminal(bench, arguments)
  }

  /// The targets checked and the report written, from `out`'s results.
  func finish(
    started: Date, core: CoreCosts, secure: SecureCosts, capacity: EdgeCapacity?,
    fleet: FleetRows?, plan: Plan
  ) throws {
    if let capacity { print(capacity.summary) }
    let results = try Results(file: out + "/results.txt")
    Self.sayInvalid(results)
    let targets = Target.all(results, core: core)
    print("\ntargets:")
    for target in targets {
      print(
        "  \(Report.verdict(target.met).replacingOccurrences(of: "*", with: "")): ", terminator: "")
      print("\(target.name): \(target.measured)")
    }
    if smoke {
      try Self.checkComplete(results, plan: plan)
      if edgeLoad != nil {
        guard let capacity, capacity.heartbeatsPerSecond.allSatisfy({ $0 > 0 }) else {
          throw ValidationError("smoke: edge-load measured no acked heartbeat")
        }
        print("smoke: tether-edge's capacity measured (edge-load)")
      }
      if device != nil {
        guard let fleet, !fleet.otherEdgeJoin.isEmpty, !fleet.otherEdgeQuit.isEmpty,
          fleet.busMessagesIn > 0, (fleet.mirror?.fullReadSeconds ?? 0) > 0,
          fleet.capacityOn?.heartbeatsPerSecond.allSatisfy({ $0 > 0 }) ?? true
        else { throw ValidationError("smoke: the fleet's rows were not measured") }
        print("smoke: the fleet's rows measured (nats-server, two edges)")
      }
    }
    guard let docs = docs ?? (smoke ? out + "/BENCHMARKS.md" : nil) else { return }
    let report = Report(
      results: results, core: core, secure: secure, targets: targets, machine: Self.machine(),
      commit: Self.commit(), duration: Date().timeIntervalSince(started),
      sizes: sizes.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) },
      vmRt: vmRt.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }, plot: plot,
      command: smoke
        ? "`tether-benchmarks --smoke`"
        : quick
          ? "`make bench-quick`"
          : keepRows
            ? "`make bench` (timer and scale rows), then `tether-benchmarks --keep-rows` (the "
              + "edge and the fleet measured again; the time, machine and commit given are that "
              + "second run's, and the other rows may come from another machine)"
            : keepTimerRows
              ? "`make bench` (timer rows), then `tether-benchmarks --keep-timer-rows` (the scale "
                + "rows and the edge measured again; the time, machine and commit given are that "
                + "second run's, and the timer rows may come from another machine)"
              : "`make bench`",
      edge: capacity, fleet: fleet)
    try report.markdown.write(toFile: docs, atomically: true, encoding: .utf8)
    print("\nwrote \(docs)")
    if let readme {
      let text = try String(contentsOfFile: readme, encoding: .utf8)
      guard let updated = ReadmeBlock(report: report).replacing(in: text) else {
        throw ValidationError("\(readme) has no \(ReadmeBlock.begin) ... \(ReadmeBlock.end) block")
      }
      try updated.write(toFile: readme, atomically: true, encoding: .utf8)
      print("wrote the real-time result in \(readme)")
    }
  }

  /// tether-edge and tether-bench's relay are load, never at a real-time policy: under
  /// `chrt -f 10 make bench` they would inherit it from this process (and queue the measured
  /// loop behind them, or starve it). The loop's policy is tether-bench's alone to set.
  static func runAtDefaultPolicy() {
    let resetOnFork: Int32 = 0x4000_0000  // SCHED_RESET_ON_FORK
    var param = sched_param()
    let policy = sched_getscheduler(0)
    guard policy >= 0, policy & ~resetOnFork != SCHED_OTHER else { return }
    if sched_setscheduler(0, SCHED_OTHER, &param) == 0 {
      print("tether-benchmarks: started at policy \(policy & ~resetOnFork); now the default")
    } else {
      print("tether-benchmarks: started at policy \(policy & ~resetOnFork) and cannot leave it")
    }
  }

  /// One line per session: its channel, then a version 2 token for it (any uid, never
  /// expiring). Every design of tether-bench speaks version 2: the edge takes nothing else.
  static func writeTokens(count: Int, to path: String) throws {
    let app = try AppID(validating: Array(appID.utf8))
    let minter = try TokenMinter(certificate: Array(certificate.utf8))
    var text = ""
    for index in 0..<count {
      let name = "bench-\(index)"
      let channel = try ChannelName(validating: Array(name.utf8))
      text += "\(name) \(minter.mint(appID: app, grant: .channel(channel, uid: 0), expiresAt: 0))\n"
    }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
  }

  /// Runs a program with its output on this terminal; fails unless it exits 0.
  static func runToTerminal(_ program: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw ValidationError("\(program) exited with \(process.terminationStatus)")
    }
  }

  /// Rows that are no result, said once here (the report shows them as invalid): a row of
  /// sessions that never all joined measured nothing, and a CPU comparison of windows with
  /// different traffic compares different work.
  static func sayInvalid(_ results: Results) {
    let invalid = results.rows.filter { !$0.valid }
    guard !invalid.isEmpty else { return }
    print("\n\(invalid.count) of \(results.rows.count) rows invalid (no figures reported):")
    for row in invalid {
      print(
        "  \(row.sessions) \(row.load) \(row.window) \(row.pattern) \(row.design) "
          + "\(row.priority): \(row.why), \(row.text["connected"] ?? "?") connected")
    }
  }

  /// The smoke run's check: every row kind (each design and baseline, each window and
  /// pattern, each priority) reported with every key, every session connected, every cost
  /// figure there. No timing is asserted.
  static func checkComplete(_ results: Results, plan: Plan) throws {
    let expected = plan.rowCount()
    let costs = [
      "ns_per_ack_through_the_driver", "burst_firing_ns_per_engine",
      "descriptors_per_engine", "heap_bytes_per_engine",
    ]
    var kinds = Set<String>()
    for row in results.rows { kinds.insert("\(row.window) \(row.pattern) \(row.design)") }
    let wanted: Set<String> = Set(
      ["alone none kernel", "alone none bare"]
        + ["tether", "previous", "naive"].flatMap { design in
          ["heartbeats none \(design)"] + plan.patterns.map { "churn \($0) \(design)" }
        })
    let missingKeys = results.rows.flatMap { row in
      Results.rowKeys.filter { row.text[$0] == nil }
    }
    let priorities = Set(results.rows.map(\.priority))
    guard results.rows.count == expected, kinds == wanted, missingKeys.isEmpty,
      priorities.count == plan.priorities.split(separator: ",").count,
      costs.allSatisfy({ results.costs[$0] != nil }),
      results.rows.allSatisfy({ $0["connected"] == Double($0.sessions) })
    else {
      throw ValidationError(
        "smoke: \(results.rows.count) of \(expected) rows, kinds \(kinds.sorted()), "
          + "keys missing \(Set(missingKeys).sorted()), priorities \(priorities.sorted()), "
          + "costs \(results.costs.keys.sorted()), connected "
          + "\(results.rows.map { $0.text["connected"] ?? "?" })")
    }
    let scaleSteps = Scale.steps(small: true, runs: 1)
    let scaleMissing = results.scaleRows.flatMap { row in Scale.keys.filter { row.text[$0] == nil }
    }
    guard results.scaleRows.count == scaleSteps.count, scaleMissing.isEmpty,
      results.scaleRows.allSatisfy({ $0["connected"] == Double($0.sessions) })
    else {
      throw ValidationError(
        "smoke: \(results.scaleRows.count) of \(scaleSteps.count) scale rows, keys missing "
          + "\(Set(scaleMissing).sorted()), connected "
          + "\(results.scaleRows.map { $0.text["connected"] ?? "?" })")
    }
    print(
      "smoke: \(expected) rows (kernel, bare, every design in every window, "
        + "\(priorities.count) priorities, \(plan.runs) runs each), \(scaleSteps.count) scale rows "
        + "(--direct, own lateness on and off) and the cost figures reported")
  }

  static func machine() -> String {
    var parts: [String] = []
    if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
      let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
    {
      parts.append(
        model.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "")
    }
    parts.append("\(ProcessInfo.processInfo.activeProcessorCount) cores")
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: &name.release) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    parts.append("Linux \(release)")
    return parts.filter { !$0.isEmpty }.joined(separator: ", ")
  }

  static func commit() -> String {
    let process = Process()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
    process.arguments = ["rev-parse", "--short", "HEAD"]
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return "unknown" }
    process.waitUntilExit()
    let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
  }
}
