// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TetherLab

/// How many datagrams one tether-edge handles a second at saturation, on its one thread:
/// `edge-load` (Benchmarks/edge-load) joins sessions to a fresh edge and keeps sealed
/// heartbeats in flight with sendmmsg, a closed loop, counting the acks. Each run's figures
/// are read from its one `key=value` line; the report gives the median of the runs and
/// their range. On this 2-core machine the load generator has the other core: if it, not
/// the edge, is the bottleneck, the edge's CPU stays under a core, and the report says so.
struct EdgeCapacity {
  /// Heartbeats acked a second (each one datagram in and one out at the edge).
  var heartbeatsPerSecond: [Double] = []
  /// The edge's CPU, as a share of one core.
  var edgeCPU: [Double] = []
  /// Microseconds of the edge's CPU per heartbeat (in, opened, heard, acked, sealed, out).
  var microsecondsPerHeartbeat: [Double] = []
  /// Heartbeats sent and never acked (the edge's or the load's buffers full), all runs.
  var lost = 0
  var sessions = 0
  var window = 0
  var seconds = 0.0

  static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
  }

  /// `runs` runs of `load` (the edge-load program), each against a fresh `edge` (given
  /// `edgeArguments` too), with `sessions` sessions of `window` heartbeats in flight for
  /// `seconds`.
  static func measure(
    load: String, edge: String, appID: String, certificate: String, tokens: String,
    sessions: Int = 64, window: Int = 16, seconds: Double, runs: Int, edgeArguments: [String] = []
  ) throws -> EdgeCapacity {
    var capacity = EdgeCapacity(sessions: sessions, window: window, seconds: seconds)
    for _ in 0..<runs {
      let server = try EdgeProcess(
        binary: edge, appID: appID, certificate: certificate, timeScale: 1,
        extraArguments: ["--log-level", "warning"] + edgeArguments)
      defer { server.stop() }
      var arguments = [
        "--edge", server.address, "--tokens", tokens, "--app-id", appID,
        "--sessions", String(sessions), "--window", String(window), "--seconds", String(seconds),
      ]
      if let pid = server.pid { arguments += ["--edge-pid", String(pid)] }
      let line = try Self.output(of: load, arguments)
      let fields = Self.fields(of: line)
      guard let rate = fields["heartbeats_per_s"].flatMap(Double.init),
        let cpu = fields["edge_cpu"].flatMap(Double.init),
        let perHeartbeat = fields["us_per_heartbeat_edge"].flatMap(Double.init),
        let lost = fields["lost"].flatMap(Int.init)
      else { throw ValidationError("edge-load printed no figures: \(line)") }
      capacity.heartbeatsPerSecond.append(rate)
      capacity.edgeCPU.append(cpu)
      capacity.microsecondsPerHeartbeat.append(perHeartbeat)
      capacity.lost += lost
    }
    return capacity
  }

  /// The `key=value` pairs of a line.
  static func fields(of line: String) -> [String: String] {
    var fields: [String: String] = [:]
    for word in line.split(separator: " ") {
      let parts = word.split(separator: "=", maxSplits: 1)
      if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
    }
    return fields
  }

  /// What `program` printed on stdout; fails unless it exits 0.
  static func output(of program: String, _ arguments: [String]) throws -> String {
    let process = Process()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw ValidationError("\(program) exited with \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// One line for the terminal.
  var summary: String {
    "edge: \(Target.format(Self.median(heartbeatsPerSecond))) heartbeats a second at "
      + "\(Target.format(100 * Self.median(edgeCPU))) % of a core, "
      + "\(Target.format(Self.median(microsecondsPerHeartbeat))) us of the edge's CPU each "
      + "(median of \(heartbeatsPerSecond.count); \(lost) lost)"
  }

  /// "median [low..high]" of `values`, each through `format`.
  static func spread(_ values: [Double], _ format: (Double) -> String) -> String {
    guard let low = values.min(), let high = values.max() else { return "-" }
    return "\(format(median(values))) [\(format(low))..\(format(high))]"
  }
}
