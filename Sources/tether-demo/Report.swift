import Foundation
import TetherLab

struct Row {
  let event: String
  let device: String
  let expected: Double?  // seconds after T0; nil: a window, described in `expectation`
  let expectation: String
  let observed: Double?
  let ok: Bool
}

func ms(_ seconds: Double) -> String { String(format: "%+.0f ms", seconds * 1000) }

/// The table: each row an event, when the rules say it should come, and when it came.
struct Report {
  var t0 = 0.0
  var rows: [Row] = []
  let tolerance: Double

  mutating func exact(
    _ event: String, _ device: String, at expected: Double, _ line: ManagedProcess.Line?
  ) {
    let observed = line.map { $0.time - t0 }
    let ok = observed.map { abs($0 - expected) <= tolerance } ?? false
    rows.append(
      Row(
        event: event, device: device, expected: expected, expectation: ms(expected),
        observed: observed, ok: ok))
  }

  mutating func window(
    _ event: String, _ device: String, after: Double, by: Double, _ line: ManagedProcess.Line?
  ) {
    let observed = line.map { $0.time - t0 }
    let ok = observed.map { $0 >= after && $0 <= by + tolerance } ?? false
    rows.append(
      Row(
        event: event, device: device, expected: nil, expectation: "by " + ms(by),
        observed: observed, ok: ok))
  }

  /// An event the rules say must not come: ok when it did not.
  mutating func never(_ event: String, _ device: String, _ line: ManagedProcess.Line?) {
    let observed = line.map { $0.time - t0 }
    rows.append(
      Row(
        event: event, device: device, expected: nil, expectation: "never",
        observed: observed, ok: observed == nil))
  }

  mutating func mark(_ event: String, at time: Double) {
    rows.append(
      Row(
        event: event, device: "-", expected: time - t0, expectation: ms(time - t0),
        observed: time - t0, ok: true))
  }

  func printed() -> Int {
    func pad(_ s: String, _ n: Int) -> String {
      s.count >= n ? s : s + String(repeating: " ", count: n - s.count)
    }
    print(pad("event", 50) + pad("at", 4) + pad("expected", 13) + pad("observed", 12) + "late by")
    print(String(repeating: "-", count: 90))
    for row in rows {
      let observed = row.observed.map(ms) ?? "never"
      var late = ""
      if let e = row.expected, let o = row.observed {
        late = String(format: "%.1f ms", (o - e) * 1000)
      }
      print(
        pad(row.event, 50) + pad(row.device, 4) + pad(row.expectation, 13) + pad(observed, 12)
          + pad(late, 11) + (row.ok ? "ok" : "MISSED"))
    }
    let missed = rows.filter { !$0.ok }.count
    print(
      missed == 0
        ? "\nEvery event came when the rules say (within \(Int(tolerance * 1000)) ms)."
        : "\n\(missed) event(s) missed.")
    return missed
  }
}

/// Sleeps until `time` on the monotonic clock (no-op if it has passed).
func sleep(until time: Double) {
  let delay = time - monotonicSeconds()
  if delay > 0 { usleep(UInt32(delay * 1e6)) }
}
