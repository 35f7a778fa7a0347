// SPDX-License-Identifier: Apache-2.0
import Foundation
import TetherLab

/// `expected` is in seconds after T0; nil for a window, described in `expectation`.
typealias Row = (
  event: String, device: String, expected: Double?, expectation: String, observed: Double?,
  ok: Bool
)

func ms(_ seconds: Double) -> String { String(format: "%+.0f ms", seconds * 1000) }

/// The table: each row an event, when the rules say it should come, and when it came.
struct Report {
  var t0 = 0.0
  var rows: [Row] = []
  /// How late an event may come.
  let tolerance: Double
  /// How early one may (the VM's run sets it once the guest's clock is mapped).
  var early: Double

  init(tolerance: Double, early: Double? = nil) {
    self.tolerance = tolerance
    self.early = early ?? tolerance
  }

  mutating func exact(
    _ event: String, _ device: String, at expected: Double, _ line: ManagedProcess.Line?
  ) {
    let observed = line.map { $0.time - t0 }
    let ok = observed.map { $0 - expected >= -early && $0 - expected <= tolerance } ?? false
    rows.append(Row(event, device, expected, ms(expected), observed, ok))
  }

  mutating func window(
    _ event: String, _ device: String, after: Double, by: Double, _ line: ManagedProcess.Line?
  ) {
    let observed = line.map { $0.time - t0 }
    let ok = observed.map { $0 >= after && $0 <= by + tolerance } ?? false
    rows.append(Row(event, device, nil, "by " + ms(by), observed, ok))
  }

  /// An event the rules say must not come: ok when it did not.
  mutating func never(_ event: String, _ device: String, _ line: ManagedProcess.Line?) {
    let observed = line.map { $0.time - t0 }
    rows.append(Row(event, device, nil, "never", observed, observed == nil))
  }

  mutating func mark(_ event: String, at time: Double) {
    rows.append(Row(event, "-", time - t0, ms(time - t0), time - t0, true))
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
    let within =
      early == tolerance
      ? "within \(Int(tolerance * 1000)) ms"
      : "no more than \(Int(early * 1000)) ms early, \(Int(tolerance * 1000)) ms late"
    print(
      missed == 0
        ? "\nEvery event came when the rules say (\(within))."
        : "\n\(missed) event(s) missed (each must come \(within)).")
    return missed
  }
}

/// When the relay cut a device's link, and the last packets it passed before.
struct Cut {
  let at: Double
  /// The last answer to the device (what proves its round trip), the last from it.
  let lastAnswer: Double
  let lastFrom: Double
}

extension Report {
  /// The relay cuts device `index`'s link (its uplink alone with `uplinkOnly`), and a row
  /// marks it: `format` shows the instant `shown` of the cut, counted from T0. Then `host`
  /// (`device`) must go RECONNECTING/INTERRUPTED (`event`) interrupted_after after the last
  /// answer it got, in a line after its line `from`.
  mutating func cut(
    _ relay: Relay, _ index: Int, uplinkOnly: Bool = false, _ format: String,
    showing shown: KeyPath<Cut, Double>, interrupting host: HostProcess, _ device: String,
    event: String = "RECONNECTING / INTERRUPTED", from: Int = 0, after interrupted: Double
  ) -> Cut {
    if uplinkOnly { relay.cutUplink(index) } else { relay.cut(index) }
    let at = monotonicSeconds()
    let interruptedLine = host.waitForState("RECONNECTING", "INTERRUPTED", from: from)
    // The last packets are read once the device went INTERRUPTED, not at the cut: a
    // datagram the relay took before the cut may go out after it (its thread descheduled on
    // a loaded machine: 140 ms once, beside a virtual machine), and with the uplink alone
    // cut the answer to what passed before still comes back.
    let cut = Cut(
      at: at, lastAnswer: relay.lastAnswerToDevice(index) ?? at,
      lastFrom: relay.lastFromDevice(index) ?? at)
    mark(String(format: format, (cut[keyPath: shown] - t0) * 1000), at: at)
    exact(event, device, at: cut.lastAnswer - t0 + interrupted, interruptedLine)
    return cut
  }

  /// The relay heals device `index`'s link, and a row marks it: returns when.
  mutating func heal(_ relay: Relay, _ index: Int, _ event: String) -> Double {
    relay.heal(index)
    let at = monotonicSeconds()
    mark(event, at: at)
    return at
  }

  /// `host` (`device`) leaves or logs out now (`goodbye`): its DISCONNECTED row `event`
  /// (its line `line`) comes at once. Returns when.
  mutating func goodbye(
    _ event: String, _ device: String, _ host: HostProcess, line: String, _ goodbye: () -> Void
  ) -> Double {
    let at = monotonicSeconds()
    goodbye()
    exact(event, device, at: at - t0, host.first(line))
    return at
  }
}

/// One profile's demo: tether-edge and a relay for `devices` hosts (`hosts` says who they
/// are, `thresholds` what each threshold is scaled to); prints `title`, runs `script`, then
/// prints the table. Returns how many events were missed, nil when the demo could not run.
func demo(
  _ title: String, _ setup: Setup, devices: Int, hosts: String,
  thresholds: KeyValuePairs<String, Double>,
  _ script: (inout Report, EdgeProcess, Relay) throws -> Void
) -> Int? {
  // In a virtual machine an event may come late (an emulated kernel on a shared machine: a
  // handshake took 20-50 ms there, loaded), never early: the engine counts from what it
  // received, after the relay sent it. How early it may seem to come: the engine's
  // millisecond ticks and how closely the guest's clock is mapped onto this one (set once it
  // is). At the VM's scale, 0.2, a threshold 1 s (unscaled) off is 200 ms: it misses either
  // way.
  var report =
    setup.guest == nil
    ? Report(tolerance: max(0.025, 0.1 * setup.interrupted))
    : Report(tolerance: max(0.1, 0.1 * setup.interrupted), early: 0.004)
  print(title + "\n")
  do {
    let edge = try EdgeProcess(binary: setup.edge, timeScale: setup.scale)
    let relay = try Relay(devices: devices, edgePort: edge.port)
    defer {
      relay.stop()
      edge.stop()
    }
    print("tether-edge on \(edge.address)\(hosts) through a relay;")
    let scaled = thresholds.map { "\($0.key) " + String(format: "%.0f ms", $0.value * 1000) }
    print(
      String(format: "thresholds scaled by %.2f: ", setup.scale) + scaled.joined(separator: ", ")
        + "\n")
    try script(&report, edge, relay)
  } catch {
    print("tether-demo: \(error)")
    return nil
  }
  return report.printed()
}

/// Sleeps until `time` on the monotonic clock (no-op if it has passed).
func sleep(until time: Double) {
  let delay = time - monotonicSeconds()
  if delay > 0 { usleep(UInt32(delay * 1e6)) }
}
