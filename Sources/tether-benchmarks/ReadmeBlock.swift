// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The real-time result on README's first screen, rewritten by each `make bench` between
/// two markers, so that the README never states a figure the last run did not measure.
struct ReadmeBlock {
  static let begin = "<!-- make bench: real-time result -->"
  static let end = "<!-- /make bench -->"

  var report: Report

  /// The block's text, markers excluded: one row per priority at the most sessions, both
  /// cores busy, Tether's heartbeats window beside the kernel and bare baselines measured
  /// alone at that priority, and why the default priority's tail is the scheduler's.
  var markdown: String {
    let results = report.results
    let n = results.sessionCounts.max() ?? 0
    var lines = [
      "How late Tether's deadlines fire (`make bench`, \(Report.today()), commit "
        + "`\(report.commit)`, \(report.machine)): \(n) sessions on one libev loop, "
        + (n > 2_000 ? "heartbeats every second" : "thresholds scaled (docs/BENCHMARKS.md)")
        + ", both cores kept busy by other processes; each figure the median of "
        + "\(report.runs) runs, in microseconds, beside the kernel's own wake-up "
        + "(`clock_nanosleep`) and a bare timerfd loop with the same deadlines, each measured "
        + "alone at the same priority and load:",
      "",
      "| loop thread | Tether p99 | p99.9 | kernel alone p99 | p99.9 | bare loop alone p99 | p99.9 |",
      "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for priority in results.priorities {
      func cells(_ design: String, _ window: String) -> [String] {
        guard
          let row = results.row(
            sessions: n, load: "busy", window: window, design: design, priority: priority),
          row.valid
        else { return ["-", "-"] }
        return [Target.format(row["fired_p99"]), Target.format(row["fired_p999"])]
      }
      let label =
        priority == "default"
        ? "default (SCHED_OTHER)"
        : priority.replacingOccurrences(
          of: "fifo:", with: "SCHED_FIFO ")
      let row =
        [Report.policies(results, priority).replacingOccurrences(of: priority, with: label)]
        + cells("tether", "heartbeats") + cells("kernel", "alone") + cells("bare", "alone")
      lines.append("| \(row.joined(separator: " | ")) |")
    }
    lines += [
      "",
      "At the default priority the tail is the scheduler's, not the design's: the loop thread "
        + "waits for a busy core's time slice like any other thread, and the kernel's own "
        + "wake-up waits as long. At SCHED_FIFO it runs as soon as it wakes, near the "
        + "machine's limit. How to run a loop so on a board: [docs/REALTIME.md](docs/REALTIME.md); "
        + "every row, CPU against naive libev and the 100,000-session rows: "
        + "[docs/BENCHMARKS.md](docs/BENCHMARKS.md).",
    ]
    return lines.joined(separator: "\n")
  }

  /// `text` with the block between the markers replaced; nil when a marker is missing.
  func replacing(in text: String) -> String? {
    guard let start = text.range(of: Self.begin), let stop = text.range(of: Self.end),
      start.upperBound <= stop.lowerBound
    else { return nil }
    return String(text[..<start.upperBound]) + "\n" + markdown + "\n"
      + String(text[stop.lowerBound...])
  }
}
