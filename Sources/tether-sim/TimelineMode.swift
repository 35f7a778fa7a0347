// SPDX-License-Identifier: Apache-2.0
import Glibc
import TetherCore
import TetherSim

/// `tether-sim` with no arguments (`make sim`): plays docs/BEHAVIOUR.md §1.4's seed timeline on the Tether
/// core in virtual time, at the default thresholds, and prints when each event was expected
/// and when it happened.
///
/// Two devices, A and B, share a channel through the real edge server (tether-edge's
/// EdgeServer, sans-IO) 100 ms away each way. B joins first; A joins at T0 = 10 s; A's link
/// is cut at 15 s and healed at 40 s; A leaves at 60 s. A second run never heals, to reach
/// the 20-minute give-up. Every "expected" time is computed from the rules (last data +
/// threshold), not copied from a run; ``main()`` is 1 if any event missed its instant.
enum TimelineMode {
  static let names = ["A", "B"]

  static func main() -> Int32 {
    let config = ChannelConfig(appID: Fixture.appID)
    let (a, b) = (SeedTimeline.deviceA, SeedTimeline.deviceB)
    var report = Report()
    let t0 = Instant.s(10)
    let rtt = Interval.milliseconds(200)
    // A join is two round trips over protocol version 2 (INIT/RESPONSE, CONFIRM/ACCEPT).
    let join = rtt + rtt
    var sim = play(heal: .s(40), until: .s(60))
    // A's last data before the cut (the last answer that proves the server heard it), and when
    // B last heard of A (the server's last hearing of A, relayed 100 ms later).
    let aLastData = sim.lastData(of: a, atOrBefore: .s(15)) ?? .zero
    let bLastSeenA = (sim.lastHeardByServer(a, atOrBefore: .s(15)) ?? .zero) + SeedTimeline.latency

    var A = sim.clients[a]
    var B = sim.clients[b]
    report.exact(
      "join_channel: CONNECTING", a, expected: t0,
      observed: A.time(of: .connectionStateChanged(.connecting, .connecting)))
    report.exact(
      "CONNECTED / JOIN_SUCCESS", a, expected: t0 + join,
      observed: A.time(of: .connectionStateChanged(.connected, .joinSuccess)))
    report.exact(
      "user-joined(A)", b, expected: t0 + join,
      observed: B.time { if case .userJoined(1, _) = $0 { true } else { false } })
    report.scripted("link to A cut (last data at A: \(seconds(aLastData)))", at: .s(15))
    report.exact(
      "RECONNECTING / INTERRUPTED", a, expected: aLastData + config.interruptedAfter,
      observed: A.time(of: .connectionStateChanged(.reconnecting, .interrupted)))
    report.exact(
      "remote member A interrupted", b, expected: bLastSeenA + config.interruptedAfter,
      observed: B.time(of: .remoteMemberInterrupted(uid: 1)))
    report.exact(
      "RECONNECTING / LOST", a, expected: aLastData + config.lostAfter,
      observed: A.time(of: .connectionStateChanged(.reconnecting, .lost)))
    report.exact(
      "connection-lost", a, expected: aLastData + config.lostAfter,
      observed: A.time(of: .connectionLost))
    report.exact(
      "user-offline(A, DROPPED)", b, expected: bLastSeenA + config.remoteOfflineAfter,
      observed: B.time(of: .userOffline(uid: 1, reason: .dropped)))
    report.scripted("link to A healed", at: .s(40))
    let capPlusRTT = Instant.s(40) + config.retry.cap + join
    report.window(
      "CONNECTED / REJOIN_SUCCESS", a, after: .s(40), by: capPlusRTT,
      observed: A.time(of: .connectionStateChanged(.connected, .rejoinSuccess)))
    // The edge resumes A's held session without a JOINED broadcast: B learns that A is back
    // from the next presence digest, up to one presence interval (1 s) later.
    report.window(
      "user-joined(A) again", b, after: .s(40), by: capPlusRTT + .seconds(1),
      observed: B.log.last { if case .userJoined(1, _) = $0.notification { true } else { false } }?
        .at)
    sim.leave(a)
    sim.run(until: .s(61))
    A = sim.clients[a]
    B = sim.clients[b]
    report.exact(
      "leave_channel: DISCONNECTED / LEAVE_CHANNEL", a, expected: .s(60),
      observed: A.time(of: .connectionStateChanged(.disconnected, .leaveChannel)))
    report.exact(
      "user-offline(A, QUIT)", b, expected: .s(60) + rtt,
      observed: B.time(of: .userOffline(uid: 1, reason: .quit)))
    let never = play(heal: nil, until: .s(1300))
    report.exact(
      "never healed: FAILED / JOIN_FAILED", a, expected: aLastData + config.giveUpAfter,
      observed: never.clients[a].time(of: .connectionStateChanged(.failed, .joinFailed)))
    let attempts = never.clients[a].joins(since: aLastData).count

    print("Tether seed timeline on the core, in virtual time, default thresholds")
    print("(interrupted 4 s, lost 10 s, remote offline 20 s, give up 20 min; server 100 ms away)\n")
    func pad(_ s: String, _ n: Int) -> String {
      s.count >= n ? s : s + String(repeating: " ", count: n - s.count)
    }
    print(pad("event", 52) + pad("at", 4) + pad("expected", 14) + pad("observed", 14))
    print(String(repeating: "-", count: 86))
    for row in report.rows {
      let observed = row.observed.map(seconds) ?? "never"
      print(
        pad(row.event, 52) + pad(row.client, 4) + pad(row.expected, 14) + pad(observed, 12)
          + (row.ok ? "ok" : "MISSED"))
    }
    let missed = report.rows.filter { !$0.ok }.count
    print(
      "\nA sent \(attempts) rejoin attempts before giving up; each was reported with its number,")
    print("the time of the next attempt and the time left before giving up.")
    print(
      missed == 0
        ? "\nEvery event came at its expected instant."
        : "\n\(missed) event(s) missed their instant.")
    return missed > 0 ? 1 : 0
  }
}

private typealias Row = (
  event: String, client: String, expected: String, observed: Instant?, ok: Bool
)

private func seconds(_ t: Instant) -> String {
  let ms = t.nanoseconds / 1_000_000
  let fraction = String(ms % 1000)
  return "\(ms / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction + " s"
}

private struct Report {
  var rows: [Row] = []

  /// A row whose expected instant is exact.
  mutating func exact(_ event: String, _ client: Int, expected: Instant, observed: Instant?) {
    let name = TimelineMode.names[client]
    rows.append(Row(event, name, seconds(expected), observed, observed == expected))
  }

  /// A row whose expected instant is a window (a retry lands somewhere inside it).
  mutating func window(
    _ event: String, _ client: Int, after: Instant, by: Instant, observed: Instant?
  ) {
    let ok = observed.map { $0 > after && $0 <= by } ?? false
    rows.append(Row(event, TimelineMode.names[client], "by \(seconds(by))", observed, ok))
  }

  mutating func scripted(_ event: String, at time: Instant) {
    rows.append(Row(event, "-", seconds(time), time, true))
  }
}

private func play(heal: Instant?, until end: Instant) -> SimWorld {
  do {
    return try SeedTimeline.play(healAt: heal, until: end)
  } catch {
    print("tether-sim: join refused: \(error)")
    exit(2)
  }
}
