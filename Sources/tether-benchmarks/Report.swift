// SPDX-License-Identifier: Apache-2.0
import Foundation

/// docs/BENCHMARKS.md, written from one run: the machine, the command, every figure.
struct Report {
  var results: Results
  var core: CoreCosts
  var secure: SecureCosts
  var targets: [Target]
  var machine: String
  var commit: String
  var duration: Double
  var sizes: String?
  var plot: String?

  static let f = Target.format

  var markdown: String {
    var out = """
      # Benchmarks

      Every figure below was measured by one run of `make bench` (\(Int(duration / 60)) min \
      \(Int(duration) % 60) s) on \(machine), \(Self.today()), commit `\(commit)`. The raw \
      results are in `build/bench/results/` after a run. Timing figures from a shared \
      virtual machine vary from run to run: compare the columns of one row (measured side \
      by side), not one run with another.

      ## How late deadlines fire

      `tether-bench` (`Benchmarks/tether-bench`, C, libc, libev and libsodium only) runs 1, 1,000 and \
      10,000 sessions on one libev loop, each in its own channel, through a relay to \
      `tether-edge` on loopback (real UDP, real tokens), idle and with every core kept busy \
      by processes it starts (`load busy`). Thresholds are scaled so deadlines fire often: \
      1 session: heartbeat 10 ms, interrupted 50 ms; 1,000: 100 ms and 400 ms; 10,000: the \
      defaults, 1 s and 4 s. *steady*: each session's link is cut for a while (the relay \
      drops both directions), the cuts spread over time; *burst*: the relay holds every \
      session's datagrams for one heartbeat, passes them all at once, then cuts every link \
      at the same instant. Three designs run the same sessions, one after the other, while \
      the kernel baseline runs throughout:

      - **tether**: the library as C hosts link it (one timerfd per loop; see \
      `docs/STATES.md`, "The driver's timer").
      - **previous**: Tether's driver before it: one `ev_timer` per session at its earliest \
      deadline, moved only when that deadline gets earlier (libev's method 3).
      - **naive**: one `ev_timer` per deadline, the interrupted one stopped and started on \
      every packet (libev's method 1).
      - **kernel**: an absolute `clock_nanosleep` loop every 1 ms in a process of its own \
      (cyclictest's way), at the default priority and timer slack.

      Columns: *fired - due* is every deadline's lateness as the design measures it (for \
      tether, its own histogram: `tether_engine_get_stats`, loop figures, buckets 12.5 % \
      wide); *outside* is what a user sees: the time the INTERRUPTED callback ran minus \
      (the time the relay passed the session its last datagram + interrupted_after). \
      Microseconds; CPU as a share of one core (the device process, the relay, tether-edge).

      \(lateTable)

      """
    if let plot {
      out += "![Lateness CDF](\(plot))\n\n"
      out += "INTERRUPTED callbacks, from outside, at \(results.sessionCounts.max() ?? 0) "
      out += "sessions (steady), idle and loaded, with the kernel baseline of the same run.\n\n"
    }
    out += """
      ## Targets

      | target | measured | met |
      |---|---|---|
      \(targets.map { "| \($0.name) | \($0.measured) | \(Self.verdict($0.met)) |" }.joined(separator: "\n"))

      ## Costs

      | what | measured |
      |---|---:|
      \(costLines.joined(separator: "\n"))

      The core's figures come from `tether-benchmarks` (a release build of the Swift core, \
      no I/O); the rest from `tether-bench --cost` through the driver as C hosts link it.

      """
    if let sizes {
      out += """

        ## Size of what C hosts link

        `make sizes` (Embedded Swift, `-Osize`; run by `make bench`), both profiles:

        \(sizes)

        """
    }
    return out
  }

  var lateTable: String {
    var lines = [
      "| sessions | load | cuts | design | fired - due p50 | p99 | p99.9 | max | outside p50 | p99 | p99.9 | max | kernel p50 | p99 | p99.9 | max | CPU device | relay | edge |",
      "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.rows {
      let cells = [
        "\(row.sessions)", row.load, row.pattern, "**\(row.design)**",
        Self.f(row["fired_p50"]), Self.f(row["fired_p99"]), Self.f(row["fired_p999"]),
        Self.f(row["fired_max"]), Self.f(row["outside_p50"]), Self.f(row["outside_p99"]),
        Self.f(row["outside_p999"]), Self.f(row["outside_max"]), Self.f(row["kernel_p50"]),
        Self.f(row["kernel_p99"]), Self.f(row["kernel_p999"]), Self.f(row["kernel_max"]),
        Self.percent(row["cpu_device"]), Self.percent(row["cpu_peer"]),
        Self.percent(row["cpu_edge"]),
      ]
      lines.append("| " + cells.joined(separator: " | ") + " |")
    }
    return lines.joined(separator: "\n")
  }

  var costLines: [String] {
    var lines = [
      "| core: one decoded heartbeat ack into a connected session (activity refresh) | \(Self.f(core.refreshNanoseconds)) ns |",
      "| core: one heartbeat ack from its bytes (decode + the above) | \(Self.f(core.datagramNanoseconds)) ns |",
      "| core: bytes per connected session, \(core.sessions) held (heap + \(core.inlineBytesPerSession) inline) | \(Self.f(core.bytesPerSession)) B |",
      "| v2: one DATA datagram sealed (a heartbeat's payload; libsodium's ChaCha20-Poly1305) | \(Self.f(secure.sealNanoseconds)) ns |",
      "| v2: one DATA datagram opened (the replay window checked first) | \(Self.f(secure.openNanoseconds)) ns |",
      "| v2: one handshake on the device (INIT written, RESPONSE taken, CONFIRM and keys made) | \(Self.f(secure.deviceHandshakeMicroseconds)) us |",
      "| v2: one handshake on the edge (token and request opened, RESPONSE made, CONFIRM checked) | \(Self.f(secure.edgeHandshakeMicroseconds)) us |",
      "| v2: bytes of one heartbeat round trip (HEARTBEAT and its ACK), version 1 → version 2 | \(SecureCosts.heartbeatBytes.v1) → \(SecureCosts.heartbeatBytes.v2) B |",
    ]
    let named: [(String, String, String)] = [
      (
        "ns_per_ack_through_the_driver",
        "driver: CPU per heartbeat ack (recvmmsg, core, deadline check)", "ns"
      ),
      ("allocations_per_ack", "driver: heap allocations per ack", ""),
      (
        "burst_firing_ns_per_engine",
        "driver: one engine's INTERRUPTED in a batch of 1,000 due together", "ns"
      ),
      ("create_us_per_engine", "driver: create one engine (of 10,000 on one loop)", "us"),
      ("destroy_us_per_engine", "driver: destroy one engine (of 10,000)", "us"),
      ("descriptors_per_engine", "descriptors per engine", ""),
      ("descriptors_per_loop", "descriptors per loop, beside the engines'", ""),
      ("heap_bytes_per_engine", "driver: heap bytes per engine (session, queues, histograms)", "B"),
    ]
    for (key, label, unit) in named {
      guard let value = results.costs[key] else { continue }
      lines.append("| \(label) | \(Self.f(value))\(unit.isEmpty ? "" : " " + unit) |")
    }
    return lines
  }

  static func verdict(_ met: Bool?) -> String {
    switch met {
    case true?: "yes"
    case false?: "**no**"
    case nil: "not measured"
    }
  }

  static func percent(_ share: Double) -> String {
    share.isNaN || share < 0 ? "-" : String(format: "%.1f %%", 100 * share)
  }

  static func today() -> String {
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd"
    return formatter.string(from: Date())
  }
}
