// SPDX-License-Identifier: Apache-2.0
import Foundation
import TetherLab

/// The scale rows: `tether-bench --direct`, Tether's engines on one loop straight to a
/// `tether-edge` of their own (no relay, no cuts, heartbeats only), 10,000 and 100,000
/// sessions. The libev designs cannot be measured there (a socket per session: this
/// machine gives a process 20,000 descriptors), so Tether's 100,000 are compared with its
/// own 10,000 at the same heartbeat.
enum Scale {
  /// One tether-bench invocation: its sessions, heartbeat and own-lateness switch.
  struct Step {
    var sessions: [Int]
    var heartbeatMilliseconds: Int
    var ownLateness: Bool
    var runs: Int
  }

  /// The 100,000 sessions at 1 Hz are 100,000 heartbeats a second each way: more than the
  /// device and the edge get from two cores (about 9 % of a core per 10,000 at 1 Hz on the
  /// device, 5.5 us per heartbeat on the edge), so the rows that are results run at a 2 s
  /// heartbeat, and one run at 1 Hz says whether it fits.
  static func steps(small: Bool, runs: Int) -> [Step] {
    if small {
      return [
        Step(sessions: [2_000], heartbeatMilliseconds: 1_000, ownLateness: true, runs: 1),
        Step(sessions: [2_000], heartbeatMilliseconds: 1_000, ownLateness: false, runs: 1),
      ]
    }
    return [
      Step(
        sessions: [10_000, 100_000], heartbeatMilliseconds: 2_000, ownLateness: true, runs: runs),
      Step(sessions: [100_000], heartbeatMilliseconds: 2_000, ownLateness: false, runs: 1),
      Step(sessions: [100_000], heartbeatMilliseconds: 1_000, ownLateness: true, runs: 1),
    ]
  }

  /// Runs every step, each against a fresh edge whose session cap and join limits are
  /// raised past the step's sessions; the rows go to `out`/results.txt as `scale` lines.
  static func measure(bench: String, edge: String, out: String, small: Bool, runs: Int) throws {
    for step in steps(small: small, runs: runs) {
      let most = step.sessions.max() ?? 1
      let server = try EdgeProcess(
        binary: edge, appID: TetherBenchmarks.appID, certificate: TetherBenchmarks.certificate,
        timeScale: 1,
        extraArguments: [
          "--max-sessions", String(most + most / 10), "--join-burst", "1000000",
          "--join-rate", "1000000", "--handshake-rate", "1000000", "--log-level", "warning",
        ])
      defer { server.stop() }
      // tether-bench mints its sessions' tokens under the same certificate.
      var arguments = [
        "--direct", "--edge", server.address, "--app-id", TetherBenchmarks.appID, "--out", out,
        "--sessions", step.sessions.map(String.init).joined(separator: ","),
        "--heartbeat-ms", String(step.heartbeatMilliseconds),
        "--own-lateness", step.ownLateness ? "on" : "off", "--runs", String(step.runs),
      ]
      if let pid = server.pid { arguments += ["--edge-pid", String(pid)] }
      if small { arguments.append("--quick") }
      try TetherBenchmarks.runToTerminal(bench, arguments)
    }
  }

  /// Every key a scale row carries: the smoke run checks each is reported.
  static let keys: [String] = {
    let named = [
      "sessions", "heartbeat_ms", "own_lateness", "runs", "connected", "valid", "why",
      "fired_scope",
    ]
    let figures = [
      "join_s", "window_s", "cpu_device", "cpu_edge", "datagrams_per_s", "rss_per_session_b",
      "edge_rss_per_session_b", "kernel_slab_per_session_b", "udp_buffers_b", "descriptors",
      "fired_p50", "fired_p99",
      "fired_p999", "interrupts",
    ]
    return named + figures.flatMap { [$0, $0 + "_lo", $0 + "_hi"] }
  }()

  /// The row of `sessions` at `heartbeat` ms with own lateness on or off.
  static func row(_ r: Results, sessions: Int, heartbeat: Int, ownLateness: Bool = true)
    -> Results.Row?
  {
    r.scaleRows.first {
      $0.sessions == sessions && $0.text["heartbeat_ms"] == String(heartbeat)
        && $0.text["own_lateness"] == (ownLateness ? "on" : "off")
    }
  }
}
