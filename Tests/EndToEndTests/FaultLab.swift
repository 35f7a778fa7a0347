// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// One fault scenario's world: tether-edge, a ``FaultProxy`` seeded for this run, and the
/// thresholds every process was scaled to (the device's defaults times `scale`, the edge's
/// `--time-scale`).
struct FaultWorld {
  let test: String
  let seed: UInt64
  let scale: Double
  let edge: EdgeProcess
  let proxy: FaultProxy

  /// TETHER_FAULT_SEED replays a run; without it every run draws a new seed.
  static func seed() -> UInt64 {
    ProcessInfo.processInfo.environment["TETHER_FAULT_SEED"].flatMap { UInt64($0) }
      ?? UInt64.random(in: 1...UInt64.max)
  }

  init(_ test: String, scale: Double, devices: Int) throws {
    self.test = test
    self.scale = scale
    seed = Self.seed()
    edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    proxy = try FaultProxy(devices: devices, edgePort: edge.port, seed: seed)
    print("fault seed \(seed): \(test)")
  }

  /// Said by every expectation of the scenario, so a failure names its seed and replay.
  var replay: Comment {
    "seed \(seed); replay: make faults SEED=\(seed), or TETHER_FAULT_SEED=\(seed) swift test --filter \(test)"
  }

  var heartbeat: Double { 1 * scale }
  var interruptedAfter: Double { 4 * scale }
  var lostAfter: Double { 10 * scale }
  var remoteOfflineAfter: Double { 20 * scale }
  var retryCap: Double { 8 * scale }

  /// A device joined through the proxy as device `index`.
  func device(_ name: String, index: Int, uid: UInt32) throws -> DeviceProcess {
    try Lab.device(name, edge: edge, relay: proxy, index: index, uid: uid, scale: scale)
  }

  /// A (uid 1, proxy link 0) and B (uid 2, link 1), joined, each having seen the other.
  func twoMembers() throws -> (a: DeviceProcess, b: DeviceProcess) {
    let b = try device("B", index: 1, uid: 2)
    #expect(b.reaches("CONNECTED", "JOIN_SUCCESS"), replay)
    let a = try device("A", index: 0, uid: 1)
    #expect(a.reaches("CONNECTED", "JOIN_SUCCESS"), replay)
    #expect(a.waitFor("user-joined uid=2") != nil, replay)
    #expect(b.waitFor("user-joined uid=1") != nil, replay)
    return (a, b)
  }

  /// Both leave; the one still there sees the other QUIT, unless its last word on A was
  /// DROPPED: then A is not among its members, and it has nothing more to report (A came
  /// back at the edge, a resume, but left before a digest told B). Call with clean links.
  func bothLeave(_ a: DeviceProcess, _ b: DeviceProcess) {
    let before = b.lines.count
    let leftAt = monotonicSeconds()
    let lastJoin = b.lines.lastIndex { $0.text.contains("user-joined uid=1") } ?? -1
    let dropped = b.lines[(lastJoin + 1)...].contains {
      $0.text.contains("user-offline uid=1 reason=DROPPED")
    }
    #expect(a.leave() == 0, replay)
    guard !dropped else {
      // Nothing more about A, or (a digest of the resumed session already on its way) A
      // joined again and then QUIT.
      Thread.sleep(forTimeInterval: 3 * heartbeat)
      let after = b.lines(containing: "uid=1").filter { $0.time >= leftAt }.map(\.text)
      print("\(test): B had dropped A and not seen it join again; after A's leave: \(after)")
      #expect(
        after.isEmpty
          || (after.first?.contains("user-joined") == true
            && after.last?.contains("user-offline uid=1 reason=QUIT") == true),
        replay)
      #expect(b.leave() == 0, replay)
      proxy.stop()
      edge.stop()
      return
    }
    let quit = b.waitFor("user-offline uid=1 reason=QUIT", from: before)
    #expect(quit != nil, replay)
    if quit == nil {
      print("\(test): A's leave (at \(String(format: "%.6f", leftAt))), A then B:")
      printTimeline(a, index: 0, from: leftAt - 3)
      printTimeline(b, index: 1, from: leftAt - 3)
    }
    #expect(b.leave() == 0, replay)
    proxy.stop()
    edge.stop()
  }

  /// Kills the edge (SIGKILL), waits `down` seconds, and starts a new one on the same
  /// port: when it was killed and when the new one was listening.
  func restartEdge(down: Double) throws -> (killed: Double, back: Double) {
    let port = edge.port
    let killed = monotonicSeconds()
    edge.kill()
    if down > 0 { Thread.sleep(forTimeInterval: down) }
    try edge.start(port: port)
    return (killed, monotonicSeconds())
  }

  /// The times the proxy delivered answers to device `index` (round-trip proofs).
  func answers(_ index: Int) -> [Double] { proxy.deliveries(index).filter(\.isAnswer).map(\.time) }

  /// Whether the proxy's log shows a silence of interrupted_after between two answers to
  /// `devices` (A is link 0, B link 1): the machine, not the fault, starved one of them. If
  /// so, says so, and checks that each device's states still follow the rules.
  func starved(_ devices: [DeviceProcess]) -> Bool {
    var starved = false
    for (index, device) in devices.enumerated() {
      let oracle = LivenessOracle(
        answers: answers(index), states: device.timedStates, interruptedAfter: interruptedAfter,
        lostAfter: lostAfter, lateTolerance: Self.arrivalTolerance)
      let longest = oracle.silences(after: 0).max() ?? 0
      guard longest >= interruptedAfter - 0.002 else { continue }
      starved = true
      print("\(test): \(device.name) went \(ms(longest)) without an answer: judged by the rules")
      #expect(oracle.violations(until: monotonicSeconds()) == [], replay)
    }
    return starved
  }

  /// A datagram's kernel stamp at the device comes a moment after the proxy sent it: a
  /// silence this much above a threshold must have crossed it.
  static let arrivalTolerance = 0.01

  /// A failed scenario's evidence: the device's lines and what the proxy passed it.
  func printTimeline(_ device: DeviceProcess, index: Int, from start: Double) {
    let lines = device.lines.filter { $0.time > start }.map { ($0.time, $0.text) }
    let passed = proxy.deliveries(index).filter { $0.time > start }.map {
      (
        $0.time,
        "proxy \($0.direction) type 0x\(String($0.type, radix: 16)) seq \($0.sequence ?? 0)"
      )
    }
    for (time, text) in (lines + passed).sorted(by: { $0.0 < $1.0 }) {
      print(String(format: "%.6f ", time) + text)
    }
  }

  /// The times the proxy delivered the edge datagrams that prove device `index`'s session
  /// (``FaultDelivery/provesDevice``: not an INIT, which anyone can replay).
  func heard(_ index: Int) -> [Double] {
    proxy.deliveries(index).filter(\.provesDevice).map(\.time)
  }
}

/// A device's "state" lines as (time, "STATE REASON").
extension DeviceProcess {
  var timedStates: [(time: Double, state: String)] {
    lines.compactMap { line in
      guard let range = line.text.range(of: " state ") else { return nil }
      return (line.time, String(line.text[range.upperBound...]))
    }
  }

  func lines(containing text: String) -> [ManagedProcess.Line] {
    lines.filter { $0.text.contains(text) }
  }
}

/// What the liveness rules (docs/BEHAVIOUR.md §1.3, docs/STATES.md "Deadlines") imply from answers
/// the proxy actually delivered: INTERRUPTED at `interruptedAfter` after the last answer
/// while CONNECTED, LOST at `lostAfter` after it, never sooner, and never unless that
/// much silence really came. A silence longer than the threshold plus `lateTolerance`
/// while CONNECTED must have ended in INTERRUPTED (one between the threshold and that may
/// go either way: a datagram's kernel stamp comes a moment after the proxy sent it).
struct LivenessOracle {
  let answers: [Double]
  let states: [(time: Double, state: String)]
  let interruptedAfter: Double
  let lostAfter: Double
  let lateTolerance: Double
  /// How late the device may report a verdict (a shared, noisy machine).
  var lateBound = 0.3
  /// The device's clock and the proxy's are one clock; this much early is not early.
  var earlyTolerance = 0.002

  /// The answer an INTERRUPTED reported at `time` counts from: the latest one whose
  /// threshold had passed by then (answers that came after it do not erase it).
  func silenceStart(reportedAt time: Double) -> Double? {
    answers.last { $0 + interruptedAfter <= time + earlyTolerance }
  }

  func answer(after time: Double) -> Double? { answers.first { $0 > time } }

  /// Every way the device's states disagree with the rules, up to `end` (when the faults
  /// stopped being judged).
  func violations(until end: Double) -> [String] {
    var problems: [String] = []
    var outageFrom: Double?
    for (index, (time, state)) in states.enumerated() {
      if state == "RECONNECTING INTERRUPTED" {
        outageFrom = silenceStart(reportedAt: time)
        problems += interruptedProblems(at: time, from: outageFrom)
      } else if state == "RECONNECTING LOST" {
        guard let from = outageFrom else {
          problems.append("LOST at \(time) without an outage")
          continue
        }
        let after = time - from
        if after < lostAfter - earlyTolerance || after > lostAfter + lateBound {
          problems.append("LOST \(ms(after)) after the last answer; the rule says \(ms(lostAfter))")
        }
      } else if state.hasPrefix("CONNECTED") && time < end {
        let next = states.dropFirst(index + 1).first
        problems += unreportedSilences(from: time, next: next, end: end)
      }
    }
    return problems
  }

  private func interruptedProblems(at time: Double, from: Double?) -> [String] {
    guard let from else { return ["INTERRUPTED at \(time) with no silence before it"] }
    var problems: [String] = []
    if time - (from + interruptedAfter) > lateBound {
      problems.append("INTERRUPTED \(ms(time - from)) after the last answer: late")
    }
    if let next = answer(after: from), next < from + interruptedAfter - earlyTolerance {
      problems.append("INTERRUPTED, but answers came \(ms(next - from)) apart")
    }
    return problems
  }

  /// The silences of one CONNECTED stretch (from the answer that began it) longer than
  /// the threshold plus tolerance that no INTERRUPTED reported.
  private func unreportedSilences(
    from start: Double, next: (time: Double, state: String)?, end: Double
  ) -> [String] {
    guard let accept = answers.last(where: { $0 <= start }) else { return [] }
    var points = [accept]
    if let next, next.state == "RECONNECTING INTERRUPTED", next.time <= end,
      let reported = silenceStart(reportedAt: next.time)
    {
      points += answers.filter { $0 > accept && $0 <= reported }
    } else {
      let stop = min(next?.time ?? end, end)
      points += answers.filter { $0 > accept && $0 < stop } + [stop]
    }
    return zip(points, points.dropFirst()).filter { $1 - $0 > interruptedAfter + lateTolerance }
      .map { "a silence of \(ms($1 - $0)) from \($0) while CONNECTED, no INTERRUPTED" }
  }

  /// The silences between consecutive answers that began at or after `start`.
  func silences(after start: Double) -> [Double] {
    zip(answers, answers.dropFirst()).filter { $1 > start }.map { $1 - $0 }
  }
}

/// A peer's verdicts on a member (remote-interrupted, DROPPED) against what the edge heard
/// from it, as the proxy logged: each at its threshold after the last datagram the edge
/// heard before it, never unless that much silence came. The peer learns of a datagram
/// only from the next digest, so a silence may look up to one presence interval longer.
struct PeerOracle {
  let heard: [Double]
  let presenceInterval: Double
  var lateBound = 0.4

  func violations(_ lines: [ManagedProcess.Line], threshold: Double) -> [String] {
    lines.compactMap { line in
      guard let from = heard.last(where: { $0 + threshold <= line.time + 0.005 }) else {
        return "\(line.text): no silence before it"
      }
      if line.time - (from + threshold) > lateBound { return "\(line.text): late" }
      if let next = heard.first(where: { $0 > from }),
        next < from + threshold - presenceInterval - 0.005
      {
        return "\(line.text), but the edge heard the member \(ms(next - from)) after"
      }
      return nil
    }
  }
}

/// "+200 ms".
func ms(_ seconds: Double) -> String { String(format: "%.0f ms", seconds * 1000) }
