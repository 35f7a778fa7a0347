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
  @Option(help: "Where the raw results go.") var out = "build/bench/results"
  @Option(help: "Rewrite this file with the report (docs/BENCHMARKS.md).") var docs: String?
  @Option(help: "A markdown file with the size table (make sizes).") var sizes: String?
  @Option(help: "The plot the report shows, relative to the report.") var plot: String?
  @Flag(help: "Seconds long: checks that every part runs and reports; asserts no timing.")
  var smoke = false

  static let appID = "bench-app"
  static let certificate = "bench-certificate"

  func run() throws {
    let started = Date()
    let core = CoreCosts.measure(
      iterations: smoke ? 100_000 : 10_000_000, sessions: smoke ? 1_000 : 100_000)
    print(
      "core: \(Target.format(core.refreshNanoseconds)) ns per activity refresh, "
        + "\(Target.format(core.datagramNanoseconds)) ns per ack from its bytes, "
        + "\(Target.format(core.bytesPerSession)) B per session at \(core.sessions)")
    let secure = try SecureCosts.measure(
      datagrams: smoke ? 10_000 : 1_000_000, handshakes: smoke ? 20 : 2_000)
    print(
      "v2: \(Target.format(secure.sealNanoseconds)) ns per DATA sealed, "
        + "\(Target.format(secure.openNanoseconds)) ns opened, "
        + "\(Target.format(secure.deviceHandshakeMicroseconds)) us per handshake on the device, "
        + "\(Target.format(secure.edgeHandshakeMicroseconds)) us on the edge")
    let sessions = smoke ? [1, 20] : [1, 1_000, 10_000]
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    try? FileManager.default.removeItem(atPath: out + "/results.txt")
    let tokens = out + "/tokens.txt"
    try Self.writeTokens(count: sessions.max() ?? 1, to: tokens)
    let server = try EdgeProcess(
      binary: edge, appID: Self.appID, certificate: Self.certificate, timeScale: 1,
      // tether-bench joins thousands of sessions from one address: no join limit for it.
      extraArguments: ["--max-sessions", "40000", "--join-burst", "1000000"])
    defer { server.stop() }
    var arguments = [
      "--edge", server.address, "--tokens", tokens, "--app-id", Self.appID, "--out", out,
      "--sessions", sessions.map(String.init).joined(separator: ","), "--cost",
    ]
    if let pid = server.pid { arguments += ["--edge-pid", String(pid)] }
    if smoke { arguments.append("--quick") }
    try Self.runToTerminal(bench, arguments)
    let results = try Results(file: out + "/results.txt")
    try Self.checkConnected(results)
    let targets = Target.all(results, core: core)
    print("\ntargets:")
    for target in targets {
      print(
        "  \(Report.verdict(target.met).replacingOccurrences(of: "*", with: "")): ", terminator: "")
      print("\(target.name): \(target.measured)")
    }
    if smoke { try Self.checkComplete(results, sessions: sessions) }
    guard let docs else { return }
    let report = Report(
      results: results, core: core, secure: secure, targets: targets, machine: Self.machine(),
      commit: Self.commit(), duration: Date().timeIntervalSince(started),
      sizes: sizes.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }, plot: plot)
    try report.markdown.write(toFile: docs, atomically: true, encoding: .utf8)
    print("\nwrote \(docs)")
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

  /// Every row's sessions all connected before it was measured: a row of sessions that never
  /// joined measured nothing (no deadlines, no cuts seen), and must not be reported as if it
  /// had, nor turned into the report's figures.
  static func checkConnected(_ results: Results) throws {
    let short = results.rows.filter { !($0["connected"] >= Double($0.sessions)) }
    guard short.isEmpty else {
      let names = short.map {
        "\($0.sessions) \($0.load) \($0.pattern) \($0.design): "
          + "\($0.text["connected"] ?? "?") of \($0.sessions) connected"
      }
      throw ValidationError(
        "rows whose sessions did not all connect: " + names.joined(separator: "; "))
    }
  }

  /// The smoke run's check: every scenario and design reported, and every cost figure.
  static func checkComplete(_ results: Results, sessions: [Int]) throws {
    let expected = sessions.count * 2 * 2 * 3
    let costs = [
      "ns_per_ack_through_the_driver", "burst_firing_ns_per_engine",
      "descriptors_per_engine", "heap_bytes_per_engine",
    ]
    guard results.rows.count == expected, costs.allSatisfy({ results.costs[$0] != nil }),
      results.rows.allSatisfy({ $0["connected"] == Double($0.sessions) })
    else {
      throw ValidationError(
        "smoke: \(results.rows.count) of \(expected) rows, costs \(results.costs.keys.sorted())")
    }
    print("smoke: \(expected) scenario rows and the cost figures reported")
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
