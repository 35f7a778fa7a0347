// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing

/// A generated section of docs/STATES.md: the text between `begin` and the first
/// `end` after it is the code's output, checked on every run and rewritten with
/// TETHER_WRITE_DOCS=1 (`make docs`). The suites that own sections run in parallel and
/// share the file, so a rewrite reads and writes it under one lock.
enum GeneratedDocs {
  static let end = "<!-- END GENERATED -->"
  private static let fileLock = Mutex(())

  static var statesURL: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("docs/STATES.md")
  }

  /// Checks (or, with TETHER_WRITE_DOCS=1, rewrites) the section after `begin`.
  static func check(section begin: String, is generated: String) throws {
    try fileLock.withLock { _ in
      let text = try String(contentsOf: statesURL, encoding: .utf8)
      guard let start = text.range(of: begin),
        let stop = text.range(of: end, range: start.upperBound..<text.endIndex)
      else {
        Issue.record("docs/STATES.md lacks the markers of \(begin)")
        return
      }
      let current = String(text[start.upperBound..<stop.lowerBound])
      if ProcessInfo.processInfo.environment["TETHER_WRITE_DOCS"] == "1" {
        let updated = text.replacingCharacters(
          in: start.upperBound..<stop.lowerBound, with: generated)
        try updated.write(to: statesURL, atomically: true, encoding: .utf8)
        return
      }
      #expect(current == generated, "docs/STATES.md is stale: run `make docs` and review the diff")
    }
  }
}
