// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The targets of the timer work, checked against one run's results. A target that the
/// run did not measure (a scenario left out), or measured only in an invalid row, is
/// reported as such, never as met. Every figure is a median of runs; none is a maximum.
struct Target {
  var name: String
  var measured: String
  var met: Bool?

  static func all(_ r: Results, core: CoreCosts) -> [Target] {
    let big = r.sessionCounts.max() ?? 0
    var targets: [Target] = []
    for priority in r.priorities {
      targets += steadyUnderLoad(r, sessions: big, priority: priority)
      targets += singleSession(r, priority: priority)
    }
    targets += againstBare(r, sessions: big)
    targets += cpuAgainstNaive(r, sessions: big)
    targets.append(burst(r))
    targets += costs(r, core: core, sessions: big)
    targets += scale(r)
    return targets
  }

  static func format(_ value: Double) -> String {
    value.isNaN ? "-" : value >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
  }

  /// The rows a target compares, or the target saying why it has no verdict.
  static func compare(
    _ name: String, _ rows: [Results.Row?], _ check: ([Results.Row]) -> (String, Bool)
  ) -> Target {
    let found = rows.compactMap { $0 }
    guard found.count == rows.count else {
      return Target(name: name, measured: "not measured", met: nil)
    }
    if let invalid = found.first(where: { !$0.valid }) {
      return Target(
        name: name, measured: "invalid row (\(invalid.design): \(invalid.why))", met: nil)
    }
    let (measured, met) = check(found)
    return Target(name: name, measured: measured, met: met)
  }

  /// At the most sessions, steady churn, both cores busy, at `priority`: p99 of fired minus
  /// due at most the kernel's p99 (alone, same priority), p99.9 at most twice its p99.9,
  /// and p99 at least 10 times better than either libev design.
  static func steadyUnderLoad(_ r: Results, sessions: Int, priority: String) -> [Target] {
    let label = "\(sessions) sessions, steady churn, both cores busy, \(priority)"
    func row(_ design: String) -> Results.Row? {
      design == "kernel"
        ? r.row(
          sessions: sessions, load: "busy", window: "alone", design: design, priority: priority)
        : r.row(
          sessions: sessions, load: "busy", window: "churn", pattern: "steady", design: design,
          priority: priority)
    }
    var out = [
      compare("\(label): p99 at most the kernel's p99 (alone)", [row("tether"), row("kernel")]) {
        (
          "\(format($0[0]["fired_p99"])) us vs \(format($0[1]["fired_p99"])) us",
          $0[0]["fired_p99"] <= $0[1]["fired_p99"]
        )
      },
      compare("\(label): p99.9 at most 2x the kernel's p99.9", [row("tether"), row("kernel")]) {
        (
          "\(format($0[0]["fired_p999"])) us vs 2 x \(format($0[1]["fired_p999"])) us",
          $0[0]["fired_p999"] <= 2 * $0[1]["fired_p999"]
        )
      },
    ]
    for design in ["previous", "naive"] {
      out.append(
        compare(
          "\(label): p99 at least 10x better than the \(design) libev design",
          [row("tether"), row(design)]
        ) {
          (
            "\(format($0[0]["fired_p99"])) us vs \(format($0[1]["fired_p99"])) us",
            10 * $0[0]["fired_p99"] <= $0[1]["fired_p99"]
          )
        })
    }
    return out
  }

  /// One session, steady churn, idle and loaded: p99 at most the kernel's (alone).
  static func singleSession(_ r: Results, priority: String) -> [Target] {
    ["idle", "busy"].map { load in
      compare(
        "1 session, steady churn, \(load), \(priority): p99 at most the kernel's p99 (alone)",
        [
          r.row(
            sessions: 1, load: load, window: "churn", pattern: "steady", design: "tether",
            priority: priority),
          r.row(sessions: 1, load: load, window: "alone", design: "kernel", priority: priority),
        ]
      ) {
        (
          "\(format($0[0]["fired_p99"])) us vs \(format($0[1]["fired_p99"])) us",
          $0[0]["fired_p99"] <= $0[1]["fired_p99"]
        )
      }
    }
  }

  /// At the default priority, the most sessions, heartbeats window: p99 no worse than the
  /// bare timer loop's at the same deadline rate (issue 26, §2).
  static func againstBare(_ r: Results, sessions: Int) -> [Target] {
    ["idle", "busy"].map { load in
      compare(
        "\(sessions) sessions, heartbeats, \(load), default: p99 no worse than bare's",
        [
          r.row(
            sessions: sessions, load: load, window: "heartbeats", design: "tether",
            priority: "default"),
          r.row(
            sessions: sessions, load: load, window: "alone", design: "bare", priority: "default"),
        ]
      ) {
        (
          "\(format($0[0]["fired_p99"])) us vs \(format($0[1]["fired_p99"])) us",
          $0[0]["fired_p99"] <= $0[1]["fired_p99"]
        )
      }
    }
  }

  /// The most sessions, idle, default priority, each window: the device process's CPU no
  /// more than naive libev's in the same run (issue 26, §2).
  static func cpuAgainstNaive(_ r: Results, sessions: Int) -> [Target] {
    [("heartbeats", "none"), ("churn", "steady"), ("churn", "burst")].map { window, pattern in
      compare(
        "\(sessions) sessions, \(window)\(pattern == "none" ? "" : " (\(pattern))"), idle, "
          + "default: device CPU at most naive libev's",
        ["tether", "naive"].map {
          r.row(
            sessions: sessions, load: "idle", window: window, pattern: pattern, design: $0,
            priority: "default")
        }
      ) {
        (
          "\(format(100 * $0[0]["cpu_device"])) % vs \(format(100 * $0[1]["cpu_device"])) %",
          $0[0]["cpu_device"] <= $0[1]["cpu_device"]
        )
      }
    }
  }

  /// 1,000 sessions cut at once, idle, default priority: the INTERRUPTED callbacks' p99.9
  /// within 2 ms of their due time (the relay's last datagram + interrupted_after).
  static func burst(_ r: Results) -> Target {
    compare(
      "1000 sessions cut at once (idle, default): INTERRUPTED p99.9 within 2 ms",
      [
        r.row(
          sessions: 1000, load: "idle", window: "churn", pattern: "burst", design: "tether",
          priority: "default")
      ]
    ) {
      (
        "p99.9 \(format($0[0]["outside_p999"])) us of \(Int($0[0]["outside_n"])) callbacks",
        $0[0]["outside_p999"] <= 2000 && $0[0]["outside_n"] > 0
      )
    }
  }

  /// 100,000 sessions in one device process: at most 1 KiB each (with the engines' own
  /// lateness off, the lightest they can be), and whether 1 Hz fits on this machine.
  static func scale(_ r: Results) -> [Target] {
    guard !r.scaleRows.isEmpty else { return [] }
    let light = Scale.row(r, sessions: 100_000, heartbeat: 2_000, ownLateness: false)
    let memory = compare(
      "100,000 sessions: at most 1 KiB per session, whole device process", [light]
    ) {
      (
        "\(format($0[0]["rss_per_session_b"])) B (own lateness off)",
        $0[0]["rss_per_session_b"] <= 1024
      )
    }
    let second = Scale.row(r, sessions: 100_000, heartbeat: 1_000)
    let fits = Target(
      name: "100,000 sessions at 1 Hz: device and edge fit on this machine's cores",
      measured: second.map {
        $0.valid
          ? "yes: device \(format(100 * $0["cpu_device"])) %, edge \(format(100 * $0["cpu_edge"])) %"
          : "no (\($0.why)): device \(format(100 * $0["cpu_device"])) %, edge "
            + "\(format(100 * $0["cpu_edge"])) %, \($0.text["connected"] ?? "?") joined"
      } ?? "not measured", met: second.map(\.valid))
    return [memory, fits]
  }

  static func costs(_ r: Results, core: CoreCosts, sessions: Int) -> [Target] {
    var out = [
      Target(
        name: "ns per activity refresh (a decoded ack, in the core)",
        measured: "\(format(core.refreshNanoseconds)) ns", met: core.refreshNanoseconds <= 50),
      Target(
        name: "bytes per session in the core at \(core.sessions) sessions",
        measured: "\(format(core.bytesPerSession)) B", met: core.bytesPerSession <= 512),
    ]
    if let perAck = r.costs["allocations_per_ack"] {
      out.append(
        Target(
          name: "allocations per packet through the driver", measured: format(perAck),
          met: perAck == 0))
    }
    let row = r.row(
      sessions: sessions, load: "idle", window: "churn", pattern: "steady", design: "tether",
      priority: "default")
    for (side, key) in [("device", "cpu_device"), ("tether-edge", "cpu_edge")] {
      out.append(
        compare("CPU of one core, \(sessions) sessions, steady churn, \(side) side", [row]) {
          ("\(format(100 * $0[0][key])) %", $0[0][key] <= 0.25)
        })
    }
    return out
  }
}
