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
  /// The emulated PREEMPT_RT kernel's section (scripts/bench/vm-rt.sh writes it whole, its
  /// command and machine in it): appended as it is.
  var vmRt: String?
  var plot: String?
  /// What made the report: `make bench`, or `make bench-quick` at its small scale.
  /// The command that measured, as markdown (code spans included).
  var command = "`make bench`"
  /// tether-edge's capacity (edge-load), when it was measured.
  var edge: EdgeCapacity? = nil
  /// The fleet's rows (FleetRows.swift), when they were measured.
  var fleet: FleetRows? = nil

  static let f = Target.format

  var markdown: String {
    var out = """
      # Benchmarks

      Every figure below was measured by one run of \(command) (\(Int(duration / 60)) min \
      \(Int(duration) % 60) s) on \(machine), \(Self.today()), commit `\(commit)`, a machine \
      shared with other work while it ran. The raw results are in `build/bench/results/` \
      after a run. Every figure is the median of \(runs) runs, with their range in brackets; \
      the maximum is no result (on a kernel without preemption one run's maximum is the \
      scheduler's), so no figure or target here uses it. Compare the columns of one table \
      (measured in the same run), not one run with another.

      \(headline)

      ## How late deadlines fire

      `tether-bench` (`Benchmarks/tether-bench`, C, libc, libev and libsodium only) runs \
      \(results.sessionCounts.map(String.init).joined(separator: ", ")) sessions on one libev loop, each in its own channel, through a relay to \
      `tether-edge` on loopback (real UDP, real tokens), idle and with every core kept busy \
      by processes it starts (`load busy`). Thresholds are scaled so deadlines fire often: \
      1 session: heartbeat 10 ms, interrupted 50 ms; 1,000: 100 ms and 400 ms; 10,000: the \
      defaults, 1 s and 4 s.

      Priority is an axis: each row is measured with the loop thread at each of \
      \(results.priorities.map { "`\($0)`" }.joined(separator: " and ")) \
      (`tether-bench --priority`: `sched_setscheduler` on the loop thread alone, with \
      `SCHED_RESET_ON_FORK`; the relay, the edge and the busy processes always run at the \
      default policy). The column's heading says the policy the kernel applied. \
      `docs/REALTIME.md` says how to run a loop so on a device.

      Windows: *heartbeats* is the sessions joined and beating, no cuts; *churn* is the \
      relay cutting links, *steady* (each session's link cut for a while, the cuts spread \
      over time) or *burst* (every session's datagrams held for one heartbeat, passed at \
      once, then every link cut at the same instant), with the rejoins that follow. The \
      baselines run *alone*, in a phase of their own on the loop thread at the same policy \
      and load, never beside a design:

      - **tether**: the library as C hosts link it (one timerfd per loop; see \
      `docs/STATES.md`, "The driver's timer").
      - **previous**: Tether's driver before it: one `ev_timer` per session at its earliest \
      deadline, moved only when that deadline gets earlier (libev's method 3).
      - **naive**: one `ev_timer` per deadline, the interrupted one stopped and started on \
      every packet (libev's method 1).
      - **kernel**: an absolute `clock_nanosleep` loop every 1 ms (cyclictest's way).
      - **bare**: a heap of as many deadlines a second as the scenario's sessions fire \
      (sessions per heartbeat interval) behind one timerfd, and nothing else: the limit of \
      a timer loop on this machine.

      A row is *invalid*, and shows no figures, when a design's sessions were not all \
      connected in every run, or tether's and naive's datagrams in the window were more \
      than 5 % apart (then the CPU figures compare different work), or a real-time loop used \
      80 % of a core or more (RT throttling stops it at 95 %).

      ### fired - due, microseconds

      Every deadline's lateness as the design measures it; for tether the library's own \
      loop histogram (`tether_engine_get_stats`, buckets 12.5 % wide), which covers the \
      window alone (reset as the window opens: `tether_engine_reset_lateness`).

      \(lateTable)

      ### INTERRUPTED from outside, microseconds

      What a user sees: the time the INTERRUPTED callback ran minus (the time the relay \
      passed the session its last datagram + interrupted_after). Churn windows.

      \(outsideTable)

      ### CPU and memory per window

      CPU as a share of one core: the device process (the loop), the relay, tether-edge; \
      datagrams the relay passed both ways in the window (the same count for every design); \
      resident memory of the device process per session (VmRSS after the join, minus before).

      \(cpuTable)

      """
    if let plot {
      out += "![Lateness CDF](\(plot))\n\n"
      out += "INTERRUPTED callbacks, from outside, at \(results.sessionCounts.max() ?? 0) "
      out += "sessions (steady churn, every run), idle and loaded, a panel for each priority, with "
      out += "the kernel and bare baselines measured alone at that priority.\n\n"
    }
    out += scaleSection
    out += fleetSection
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
    if let vmRt { out += "\n" + vmRt }
    return out
  }

  var runs: String { results.rows.first?.text["runs"] ?? "?" }

  /// The fleet's rows: presence across edges against one edge, the bus in steady state,
  /// the edge's capacity with the fleet on and off.
  var fleetSection: String {
    guard let fleet else { return "" }
    var out = """
      ## A fleet of edges

      A real `nats-server -js` and two `tether-edge --fleet` processes on loopback \
      (docs/FLEET.md), time scale \(FleetRows.scale); C devices (examples/device) \
      join edge 1 one after the other (\(fleet.sameEdgeJoin.count) joins, every other one \
      then leaving) while a member of the channel waits on each edge. A join's figure runs \
      from the joiner's join call (its handshake included) to the member's user-joined; a \
      quit's from the leave call to user-offline QUIT. p50 / p99:

      | | a member on the same edge | a member on the other edge |
      |---|---:|---:|
      | join seen | \(FleetRows.percentiles(fleet.sameEdgeJoin)) | \(FleetRows.percentiles(fleet.otherEdgeJoin)) |
      | quit seen | \(FleetRows.percentiles(fleet.sameEdgeQuit)) | \(FleetRows.percentiles(fleet.otherEdgeQuit)) |

      The bus in steady state (every device joined and heartbeating, one minute of the \
      edges' time: \(Self.f(fleet.steadySeconds)) s), from nats-server's own counters \
      (`/varz`): \(fleet.busMessagesIn) messages into the bus and \(fleet.busMessagesOut) \
      delivered, for \(fleet.steadySessions) sessions on \(fleet.edges) edges; beyond the \
      edges' beacons (one a presence interval each: \(fleet.edges * 60) a minute), \
      \(Self.f(fleet.perSessionPerMinute)) messages per session per minute (the goal is 0).


      """
    if let on = fleet.capacityOn, let off = edge {
      out += """
        The edge's capacity (`edge-load`, as in Costs below) with the fleet on, beside \
        the same measure with it off: \(EdgeCapacity.spread(on.heartbeatsPerSecond, Self.f)) \
        against \(EdgeCapacity.spread(off.heartbeatsPerSecond, Self.f)) heartbeats a \
        second; \(EdgeCapacity.spread(on.microsecondsPerHeartbeat, Self.f)) against \
        \(EdgeCapacity.spread(off.microsecondsPerHeartbeat, Self.f)) us of the edge's CPU \
        per heartbeat (at a 1 s heartbeat, that many sessions per edge: a steady session \
        costs the fleet nothing per heartbeat).


        """
    }
    if let mirror = fleet.mirror { out += mirror.paragraph + "\n\n" }
    return out
  }

  /// The scale rows (`tether-bench --direct`), when they were measured.
  var scaleSection: String {
    let rows = results.scaleRows
    guard !rows.isEmpty else { return "" }
    var out = """
      ## Scale: up to \(rows.map(\.sessions).max() ?? 0) sessions in one device process

      `tether-bench --direct`: Tether's engines on one loop straight to a `tether-edge` of \
      their own on loopback (no relay, no cuts: joined, then heartbeats only), its session \
      cap and join limits raised past the sessions (`--max-sessions`, `--join-burst`, \
      `--join-rate`, `--handshake-rate`); joins spread at 2,000 a second. The libev designs \
      cannot be measured here (a socket per session; this machine gives a process 20,000 \
      descriptors and loopback 28,232 ephemeral ports): compare with them in the tables \
      above, up to 10,000 sessions, and compare 100,000 with Tether's own 10,000 here. \
      A row is no result (*no*) when a session did not join in some run, an INTERRUPTED \
      came in the window (there are no cuts: a heartbeat was not kept up with), or the \
      device or the edge used 95 % of a core or more (it does not fit on this machine). \
      Memory: the device process's VmRSS per session (after the join, minus before), and \
      beside it the kernel's: the system-wide `Slab` change per session (/proc/meminfo; \
      socket structures and queued datagrams live there) and the memory of every UDP \
      socket's queued datagrams (/proc/net/sockstat) at the end of the join; the edge's \
      whole VmRSS divided by the sessions (its 15 MB at start included). Lateness is \
      the loop's own histogram over the window (reset as it opens).

      | sessions | heartbeat | own lateness | joined (s) | datagrams/s | CPU device | CPU edge | device RSS/session | kernel Slab/session | UDP buffers | descriptors | edge RSS/session | p50 / p99 / p99.9 us | result |
      |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|

      """
    for row in rows {
      let cells = [
        "\(row.sessions)", "\(row.text["heartbeat_ms"] ?? "?") ms", row.text["own_lateness"] ?? "?",
        Self.f(row["join_s"]), row.spread("datagrams_per_s"), Self.spreadPercent(row, "cpu_device"),
        Self.spreadPercent(row, "cpu_edge"), "\(row.spread("rss_per_session_b")) B",
        "\(Self.f(row["kernel_slab_per_session_b"])) B",
        "\(Self.f(row["udp_buffers_b"] / 1024)) KiB", Self.f(row["descriptors"]),
        "\(Self.f(row["edge_rss_per_session_b"])) B",
        "\(Self.f(row["fired_p50"])) / \(Self.f(row["fired_p99"])) / \(Self.f(row["fired_p999"]))",
        row.valid ? "yes" : "**no**: \(row.why) (\(row.text["connected"] ?? "?") joined)",
      ]
      out += "| \(cells.joined(separator: " | ")) |\n"
    }
    if let ten = Scale.row(results, sessions: 10_000, heartbeat: 2_000),
      let hundred = Scale.row(results, sessions: 100_000, heartbeat: 2_000), ten.valid,
      hundred.valid
    {
      let cpu = hundred["cpu_device"] / ten["cpu_device"]
      let memory = hundred["rss_per_session_b"] / ten["rss_per_session_b"]
      out += """

        From 10,000 to 100,000 sessions (x10), 2 s heartbeat: the device's CPU x\(Self.f(cpu)) \
        (linear would be x10), its memory per session x\(Self.f(memory)) (flat would be x1).

        """
    }
    return out + "\n"
  }

  /// The first lines of the report: Tether's p99 at the most sessions, both cores busy,
  /// at each priority, beside the kernel and bare baselines at that priority.
  var headline: String {
    let n = results.sessionCounts.max() ?? 0
    var lines: [String] = []
    for priority in results.priorities {
      func p99(_ design: String, _ window: String, _ pattern: String = "none") -> String {
        guard
          let row = results.row(
            sessions: n, load: "busy", window: window, pattern: pattern, design: design,
            priority: priority)
        else { return "not measured" }
        return row.valid ? "\(Target.format(row["fired_p99"])) us" : "invalid (\(row.why))"
      }
      let policy = Self.policies(results, priority)
      lines.append(
        "- **\(policy)**, \(n) sessions, both cores busy: Tether's deadlines p99 "
          + "\(p99("tether", "heartbeats")) (heartbeats), \(p99("tether", "churn", "steady")) "
          + "(churn); the kernel's clock_nanosleep alone \(p99("kernel", "alone")), the bare "
          + "timer loop alone \(p99("bare", "alone")).")
    }
    lines.append(
      "\nAt the default priority the tail is the scheduler's: the loop waits for a busy "
        + "core's time slice like any other thread, and so do the kernel and bare baselines; "
        + "at a real-time priority it runs as soon as it wakes.")
    return lines.joined(separator: "\n")
  }

  /// A priority's heading: what was asked, and what the kernel applied if it differs.
  static func policies(_ results: Results, _ priority: String) -> String {
    let applied = Set(results.rows.filter { $0.priority == priority }.map(\.policy)).sorted()
    return applied == [priority]
      ? priority : "\(priority) (applied: \(applied.joined(separator: ", ")))"
  }

  /// The rows' scenarios, windows and designs, each once, in the order they came.
  var keys: [Results.Row] {
    var seen = Set<String>()
    return results.rows.filter {
      seen.insert("\($0.sessions) \($0.load) \($0.window) \($0.pattern) \($0.design)").inserted
    }
  }

  static func windowLabel(_ row: Results.Row) -> String {
    row.window == "churn" ? "churn, \(row.pattern)" : row.window
  }

  /// A table with the scenario's columns, then `columns` cells for each priority (from
  /// `cells`, or "invalid" when the row is).
  func table(
    _ headings: [String], rows: [Results.Row], cells: (Results.Row) -> [String]
  ) -> String {
    let priorities = results.priorities
    var heading = ["sessions", "load", "window", "design"]
    for priority in priorities {
      heading += headings.enumerated().map {
        $0.offset == 0 ? "\(Self.policies(results, priority)): \($0.element)" : $0.element
      }
    }
    var lines = [
      "| " + heading.joined(separator: " | ") + " |",
      "|---:|---|---|---|" + String(repeating: "---:|", count: headings.count * priorities.count),
    ]
    for key in rows {
      var line = ["\(key.sessions)", key.load, Self.windowLabel(key), "**\(key.design)**"]
      for priority in priorities {
        guard
          let row = results.row(
            sessions: key.sessions, load: key.load, window: key.window, pattern: key.pattern,
            design: key.design, priority: priority)
        else {
          line += Array(repeating: "-", count: headings.count)
          continue
        }
        line +=
          row.valid
          ? cells(row) : ["invalid: \(row.why)"] + Array(repeating: "", count: headings.count - 1)
      }
      lines.append("| " + line.joined(separator: " | ") + " |")
    }
    return lines.joined(separator: "\n")
  }

  var lateTable: String {
    table(["p50", "p99", "p99.9"], rows: keys) {
      [Self.f($0["fired_p50"]), $0.spread("fired_p99"), Self.f($0["fired_p999"])]
    }
  }

  var outsideTable: String {
    table(["p50", "p99", "p99.9"], rows: keys.filter { $0.window == "churn" }) {
      [Self.f($0["outside_p50"]), $0.spread("outside_p99"), Self.f($0["outside_p999"])]
    }
  }

  var cpuTable: String {
    let rows = keys.filter { $0.window != "alone" }
    return table(["CPU device", "relay", "edge", "datagrams", "B/session"], rows: rows) {
      [
        Self.spreadPercent($0, "cpu_device"), Self.percent($0["cpu_peer"]),
        Self.percent($0["cpu_edge"]), Self.f($0["datagrams"]), Self.f($0["rss_per_session_b"]),
      ]
    }
  }

  static func spreadPercent(_ row: Results.Row, _ key: String) -> String {
    let lo = row[key + "_lo"]
    let hi = row[key + "_hi"]
    return "\(percent(row[key])) [\(f(100 * lo))..\(f(100 * hi))]"
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
      (
        "descriptors_per_engine",
        "descriptors per engine (all that the engines of one loop opened, divided)", ""
      ),
      (
        "descriptors_per_loop",
        "descriptors of all the engines of one loop (their shared socket, timerfd, netlink)",
        ""
      ),
      ("heap_bytes_per_engine", "driver: heap bytes per engine (session, queues, histograms)", "B"),
    ]
    for (key, label, unit) in named {
      guard let value = results.costs[key] else { continue }
      lines.append("| \(label) | \(Self.f(value))\(unit.isEmpty ? "" : " " + unit) |")
    }
    if let edge {
      let load = "\(edge.sessions) sessions x \(edge.window) sealed heartbeats in flight"
      lines += [
        "| edge: heartbeats acked a second at saturation, one thread (`edge-load`: \(load), \(Self.f(edge.seconds)) s a run; each is a datagram in and one out) | \(EdgeCapacity.spread(edge.heartbeatsPerSecond, Self.f)) |",
        "| edge: its CPU meanwhile, as a share of one core (under a whole core: the load, on the other core, was the limit) | \(EdgeCapacity.spread(edge.edgeCPU) { Self.f(100 * $0) + " %" }) |",
        "| edge: its CPU per heartbeat (received, opened, heard, acked, sealed, sent; \(edge.lost) lost in all runs) | \(EdgeCapacity.spread(edge.microsecondsPerHeartbeat, Self.f)) us |",
      ]
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
