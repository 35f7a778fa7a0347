// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What `tether-bench --out DIR` wrote to DIR/results.txt: one `scenario` line per design
/// and scenario, one `cost` line per cost figure, each as `key=value` words.
struct Results {
  struct Row {
    var text: [String: String] = [:]

    subscript(_ key: String) -> Double { Double(text[key] ?? "") ?? .nan }
    var sessions: Int { Int(text["sessions"] ?? "") ?? 0 }
    var load: String { text["load"] ?? "" }
    var pattern: String { text["pattern"] ?? "" }
    var design: String { text["design"] ?? "" }
  }

  var rows: [Row] = []
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
      if kind == "scenario" {
        rows.append(row)
      } else if kind == "cost" {
        for (key, value) in row.text { costs[key] = Double(value) }
      }
    }
  }

  func row(sessions: Int, load: String, pattern: String, design: String) -> Row? {
    rows.first {
      $0.sessions == sessions && $0.load == load && $0.pattern == pattern && $0.design == design
    }
  }

  var sessionCounts: [Int] { Array(Set(rows.map(\.sessions))).sorted() }
}
