// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What `tether-bench --out DIR` wrote to DIR/results.txt: one `row` line per design (or
/// baseline), scenario, window and priority, one `scale` line per scale row (Scale.swift),
/// and one `cost` line per cost figure, each as
/// `key=value` words. A row's figures are medians of its runs, with `_lo` and `_hi` for
/// their range; `valid=no` rows are reported as invalid, never as a result.
struct Results {
  struct Row {
    var text: [String: String] = [:]

    subscript(_ key: String) -> Double { Double(text[key] ?? "") ?? .nan }
    var sessions: Int { Int(text["sessions"] ?? "") ?? 0 }
    var load: String { text["load"] ?? "" }
    var pattern: String { text["pattern"] ?? "" }
    var window: String { text["window"] ?? "" }
    var design: String { text["design"] ?? "" }
    /// The priority asked for (`fifo:10`) and the policy the kernel applied.
    var priority: String { text["priority"] ?? "" }
    var policy: String { text["policy"] ?? "" }
    var valid: Bool { text["valid"] == "yes" }
    var why: String { text["why"] ?? "?" }
    /// The median of the runs and their range, as "45.0 [23..149]".
    func spread(_ key: String) -> String {
      "\(Target.format(self[key])) [\(Target.format(self[key + "_lo"]))..\(Target.format(self[key + "_hi"]))]"
    }
  }

  /// Every key a row carries: the smoke run checks each is reported.
  static let rowKeys: [String] = {
    let named = [
      "sessions", "load", "pattern", "window", "design", "priority", "policy", "mlock", "runs",
      "valid", "why", "connected", "fired_worst", "outside_worst", "fired_scope",
    ]
    let figures = [
      "fired_p50", "fired_p99", "fired_p999", "fired_n", "outside_p50", "outside_p99",
      "outside_p999", "outside_n", "cpu_device", "cpu_peer", "cpu_edge", "datagrams",
      "rss_per_session_b", "deadlines_per_s", "window_s", "false_interrupts", "allocations",
    ]
    return named + figures.flatMap { [$0, $0 + "_lo", $0 + "_hi"] }
  }()

  var rows: [Row] = []
  var scaleRows: [Row] = []
  var costs: [String: Double] = [:]

  init(file: String) throws {
    let content = try String(contentsOfFile: file, encoding: .utf8)
    for line in content.split(separator: "\n") {
      let words = line.split(separator: " ")
      guard let kind = words.first else { continue }
      var row = Row()
      for word in words.dropFirst() {
        let pair = word.split(separator: "=", maxSplits: 1)
        if pair.count == 2 { row.text[String(pair[0])] = String(pair[1]) }
      }
      if kind == "row" {
        rows.append(row)
      } else if kind == "scale" {
        scaleRows.append(row)
      } else if kind == "cost" {
        for (key, value) in row.text { costs[key] = Double(value) }
      }
    }
  }

  /// The row of `design` (or `kernel`, `bare`) in a scenario's window at a priority.
  func row(
    sessions: Int, load: String, window: String, pattern: String = "none", design: String,
    priority: String
  ) -> Row? {
    rows.first {
      $0.sessions == sessions && $0.load == load && $0.window == window
        && $0.pattern == pattern && $0.design == design && $0.priority == priority
    }
  }

  var sessionCounts: [Int] { Array(Set(rows.map(\.sessions))).sorted() }
  /// The priorities asked for, in the order the rows came.
  var priorities: [String] {
    rows.map(\.priority).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
  }
}
