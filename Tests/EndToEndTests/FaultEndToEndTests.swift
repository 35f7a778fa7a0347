// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// Real faults on real sockets: the C device example and tether-edge through a
/// ``FaultProxy`` (loss, delay spikes, duplication, reordering, one- and two-way
/// blackholes), the edge killed and restarted, and (in the suite below) the device's
/// address changed in a network namespace. Each scenario has its own edge, proxy, seed and
/// ports, so the scenarios run side by side. Every expectation names the seed; a run with
/// TETHER_FAULT_SEED set replays the same faults on the same datagrams.
///
/// Device A (uid 1) is the one under faults; B (uid 2), on a clean link, is its peer and
/// judges A's silence. Thresholds are the defaults times `scale` (heartbeat 1 s, interrupted
/// 4 s, lost 10 s, remote offline 20 s, retry cap 8 s).
@Suite(Lab.enabled) struct FaultEndToEndTests {
  // MARK: - Loss

  /// 10 % of the datagrams lost each way: a round trip fails with q = 1 − 0.9² = 0.19, and
  /// INTERRUPTED needs 3 failed round trips in a row (4 heartbeat intervals without an
  /// answer; the 4th beat's answer races the deadline), q³ ≈ 0.7 % per beat. A model of
  /// these rules (scripts/test/fault-model.py: each beat answered with 1 − q, the retry backoff
  /// of docs/STATES.md) gives one INTERRUPTED every 180 to 990 beats (at default thresholds
  /// every 3 to 16 minutes), so one in this run's 80 beats in about 24 % of the runs. So the session mostly stays
  /// CONNECTED throughout; when it does not, the proxy's log shows the silence, and the
  /// session rejoins.
  @Test func loss10Percent_connected_interruptedOnlyAfterThreeLostRoundTrips() throws {
    try lossScenario(0.10, test: "loss10Percent")
  }

  /// 30 % lost each way: q = 1 − 0.7² = 0.51, q³ ≈ 13 %: the model gives INTERRUPTED every
  /// 17 to 30 beats, each at interrupted_after after the last answer, and a rejoin 2.3
  /// heartbeats later on average (a join is two round trips, §12.6: INIT and RESPONSE, then
  /// CONFIRM and ACCEPT, each pair through with 0.49); LOST in about 11 % of the outages
  /// (version 1's one-round-trip JOIN: 0.8 heartbeat, 3 %). The peer drops A only after an
  /// outage longer than remote_offline_after (20 beats): A's INITs are not heard (§12.15),
  /// so a long rejoin is silence to the edge; B's verdicts are checked against what the
  /// edge heard (expectPeerJudgedFairly).
  @Test func loss30Percent_interruptedAtTheDocumentedTimes_alwaysRejoins() throws {
    try lossScenario(0.30, test: "loss30Percent")
  }

  private func lossScenario(_ probability: Double, test: String) throws {
    let world = try FaultWorld(test, scale: 0.1, devices: 2)
    let (a, b) = try world.twoMembers()
    let start = monotonicSeconds()
    world.proxy.set(.loss(probability), device: 0)
    Thread.sleep(forTimeInterval: 8)
    let end = monotonicSeconds()
    let healed = a.lines.count
    world.proxy.heal(0)
    if a.timedStates.last?.state.hasPrefix("CONNECTED") != true {
      #expect(a.reaches("CONNECTED", "REJOIN_SUCCESS", from: healed), world.replay)
    }
    let oracle = LivenessOracle(
      answers: world.answers(0), states: a.timedStates, interruptedAfter: world.interruptedAfter,
      lostAfter: world.lostAfter, lateTolerance: FaultWorld.arrivalTolerance)
    let violations = oracle.violations(until: end)
    #expect(violations == [], world.replay)
    if !violations.isEmpty { world.printTimeline(a, index: 0, from: start) }
    #expect(!a.states.contains { $0.hasPrefix("FAILED") || $0.hasPrefix("DISCONNECTED") })
    let reconnects = a.timedStates.filter { $0.time > start && $0.state.hasPrefix("RECONNECTING") }
    let interrupted = reconnects.filter { $0.state == "RECONNECTING INTERRUPTED" }
    // Every outage was an INTERRUPTED (no other reason has a cause here), and each ended in
    // a rejoin.
    #expect(
      reconnects.allSatisfy { $0.state.hasSuffix("INTERRUPTED") || $0.state.hasSuffix("LOST") })
    #expect(a.lines(containing: "rejoin-success").count == interrupted.count, world.replay)
    expectPeerJudgedFairly(world, b, until: end)
    // B's link is clean and B is fine: A, however lossy its own link, never drops it (its
    // members' clock stops while it hears nothing). A lost digest can make B look
    // interrupted to A for a moment (remote-interrupted, then resumed): counted below.
    #expect(a.lines(containing: "user-offline uid=2").isEmpty, world.replay)
    let falseAlarms = a.lines(containing: "remote-interrupted uid=2").count
    let silences = oracle.silences(after: start)
    let longest = silences.max() ?? 0
    let uplink = world.proxy.counts(0, .uplink)
    let downlink = world.proxy.counts(0, .downlink)
    print(
      "\(test): seed \(world.seed): up \(uplink.dropped)/\(uplink.received) lost, down "
        + "\(downlink.dropped)/\(downlink.received) lost; silences over interrupted_after: "
        + "\(silences.filter { $0 > world.interruptedAfter + FaultWorld.arrivalTolerance }.count) "
        + "certain, \(silences.filter { $0 > world.interruptedAfter - 0.002 }.count) "
        + "possible; INTERRUPTED \(interrupted.count), LOST \(a.lines(containing: "LOST").count); "
        + "longest silence \(ms(longest)); A saw B remote-interrupted \(falseAlarms) times")
    world.bothLeave(a, b)
  }

  /// B's verdicts on A come at their thresholds after the last datagram the edge heard from
  /// A, never sooner: remote-interrupted at interrupted_after, DROPPED at remote_offline_after.
  private func expectPeerJudgedFairly(_ world: FaultWorld, _ b: DeviceProcess, until end: Double) {
    let oracle = PeerOracle(heard: world.heard(0), presenceInterval: world.heartbeat)
    let verdicts = [
      ("remote-interrupted uid=1", world.interruptedAfter),
      ("user-offline uid=1 reason=DROPPED", world.remoteOfflineAfter),
    ]
    for (text, threshold) in verdicts {
      let lines = b.lines(containing: text).filter { $0.time <= end }
      #expect(oracle.violations(lines, threshold: threshold) == [], world.replay)
    }
  }

  // MARK: - Delay, duplication, reordering

  /// 500 ms more each way for 3 s (a round trip 1 s slower) with interrupted_after at 2 s
  /// (scale 0.5, heartbeat 500 ms): the longest silence is one beat plus the round trip's
  /// extra second, 1.5 s, below the threshold. Nothing happens, at A or at B.
  @Test func delaySpike500ms_belowInterruptedAfter_changesNothing() throws {
    let world = try FaultWorld("delaySpike500ms", scale: 0.5, devices: 2)
    let (a, b) = try world.twoMembers()
    let start = monotonicSeconds()
    world.proxy.set(.delay(0.5), device: 0)
    Thread.sleep(forTimeInterval: 3)
    world.proxy.heal(0)
    Thread.sleep(forTimeInterval: 1.5)
    let end = monotonicSeconds()
    let oracle = LivenessOracle(
      answers: world.answers(0), states: a.timedStates, interruptedAfter: world.interruptedAfter,
      lostAfter: world.lostAfter, lateTolerance: FaultWorld.arrivalTolerance)
    let longest = oracle.silences(after: start).max() ?? 0
    #expect(oracle.violations(until: end) == [], world.replay)
    // The spike happened (a round trip a second longer), and stayed below the threshold.
    #expect(longest > 1.0 && longest < world.interruptedAfter, "\(ms(longest)); \(world.replay)")
    print("delaySpike500ms: seed \(world.seed): longest silence \(ms(longest))")
    if !world.starved([a, b]) {
      #expect(a.states == ["CONNECTING CONNECTING", "CONNECTED JOIN_SUCCESS"], world.replay)
      #expect(b.lines(containing: "uid=1").map(\.text).allSatisfy { $0.contains("user-joined") })
    }
    world.bothLeave(a, b)
  }

  /// Every datagram twice, both ways, on both links, from the first JOIN to the LEAVE: one
  /// join, one user-joined each, one QUIT, nothing else.
  @Test func duplicateEveryDatagram_changesNothing() throws {
    let world = try FaultWorld("duplicateEveryDatagram", scale: 0.05, devices: 2)
    for device in 0..<2 { world.proxy.set(.duplicate(1, lag: 0.002), device: device) }
    try expectNothingButJoinAndLeave(world, run: 1.5)
    for direction in FaultDirection.allCases {
      #expect(world.proxy.counts(0, direction).duplicated > 10, "\(direction)")
    }
  }

  /// A third of the datagrams, both ways, on both links, held 140 ms, from the first JOIN
  /// to the LEAVE (scale 0.2: heartbeat and presence every 200 ms, interrupted_after
  /// 800 ms), so answers, digests and LEFTs overtake one another. The longest silence this
  /// can make is below interrupted_after both for a device (a beat whose HEARTBEAT and
  /// answer are both held: 200 + 2 × 140 = 480 ms) and for a peer's view of a member (its
  /// beat held, one digest period, the digest held: 200 + 140 + 200 + 140 = 680 ms).
  /// Nothing but the join and the leave.
  @Test func reorderAThirdOfTheDatagrams_changesNothing() throws {
    let world = try FaultWorld("reorderAThirdOfTheDatagrams", scale: 0.2, devices: 2)
    for device in 0..<2 { world.proxy.set(.reorder(1.0 / 3, hold: 0.14), device: device) }
    try expectNothingButJoinAndLeave(world, run: 3)
    let held = (0..<2).flatMap { d in FaultDirection.allCases.map { world.proxy.counts(d, $0).held }
    }
    #expect(held.reduce(0, +) > 10, "\(held)")
  }

  /// B's downlink 150 ms slower for a while, then fast again just as A leaves: the LEFT
  /// overtakes the digests still held on B's link, which list A as ALIVE (reordering at
  /// the end of a delay spike). A quit once: B reports one QUIT and does not see A join
  /// again.
  @Test func staleDigestOvertakenByLeft_memberQuitsOnce() throws {
    let world = try FaultWorld("staleDigestOvertakenByLeft", scale: 0.1, devices: 2)
    let (a, b) = try world.twoMembers()
    world.proxy.set(.delay(0.15), .downlink, device: 1)
    Thread.sleep(forTimeInterval: 0.5)
    world.proxy.set(.clean, .downlink, device: 1)
    let before = b.lines.count
    #expect(a.leave() == 0, world.replay)
    #expect(b.waitFor("user-offline uid=1 reason=QUIT", from: before) != nil, world.replay)
    Thread.sleep(forTimeInterval: 10 * world.heartbeat)  // the held digests, the LEFT repeats
    let seen = b.lines[before...].map(\.text).filter { $0.contains("uid=1") }
    #expect(seen.count == 1, "B saw \(seen); \(world.replay)")
    #expect(b.leave() == 0, world.replay)
    world.proxy.stop()
    world.edge.stop()
  }

  private func expectNothingButJoinAndLeave(_ world: FaultWorld, run seconds: Double) throws {
    let (a, b) = try world.twoMembers()
    Thread.sleep(forTimeInterval: seconds)
    let before = b.lines.count
    #expect(a.leave() == 0, world.replay)
    #expect(b.waitFor("user-offline uid=1 reason=QUIT", from: before) != nil, world.replay)
    Thread.sleep(forTimeInterval: 10 * world.heartbeat)  // late copies and repeats
    #expect(b.leave() == 0, world.replay)
    // The fault alone cannot make a silence of interrupted_after; a device the machine
    // starved of CPU can, and is then judged by the rules instead.
    guard !world.starved([a, b]) else { return }
    let joined = ["CONNECTING CONNECTING", "CONNECTED JOIN_SUCCESS", "DISCONNECTED LEAVE_CHANNEL"]
    #expect(a.states == joined, world.replay)
    #expect(b.states == joined, world.replay)
    #expect(a.lines(containing: "user-").map(\.text).count == 1, world.replay)
    let bSaw = b.lines(containing: "user-").map(\.text)
    #expect(bSaw.count == 2, world.replay)
    #expect(bSaw.first?.contains("user-joined uid=1") == true, world.replay)
    #expect(bSaw.last?.contains("user-offline uid=1 reason=QUIT") == true, world.replay)
    #expect(a.lines(containing: "remote-").isEmpty && b.lines(containing: "remote-").isEmpty)
    world.proxy.stop()
    world.edge.stop()
  }

  // MARK: - Blackholes

  /// The uplink alone dies: presence keeps reaching A, but only answers count, so
  /// INTERRUPTED at interrupted_after and LOST at lost_after after the last answer; B
  /// hears nothing more of A: remote-interrupted at interrupted_after and DROPPED at
  /// remote_offline_after after the edge last heard A. Healed: a rejoin within the backoff
  /// bound, and B sees A join again.
  @Test func uplinkBlackhole_interruptedAndLostFromTheLastAnswer_peerDropsAtRemoteOffline()
    throws
  {
    let world = try FaultWorld("uplinkBlackhole", scale: 0.05, devices: 2)
    let (a, b) = try world.twoMembers()
    Thread.sleep(forTimeInterval: 0.3)
    world.proxy.set(.blackholed, .uplink, device: 0)
    try expectInterruptedThenLost(world, a)
    let lastAnswer = try #require(world.proxy.lastAnswerToDevice(0))
    let presenceAfter = world.proxy.deliveries(0).filter {
      $0.direction == .downlink && $0.time > lastAnswer
    }
    #expect(presenceAfter.count >= 5, "presence kept arriving; \(world.replay)")
    let dropped = try expectPeerVerdicts(world, b, dropped: true)
    try expectRejoin(world, a, b, afterDropAt: dropped)
  }

  /// The downlink alone dies: A hears nothing, so INTERRUPTED and LOST at their thresholds
  /// after the last answer. A keeps trying, and its INITs reach the edge (spaced at most by
  /// the retry cap, 8 s), but an INIT proves nothing of its sender (anyone who saw one can
  /// send it again; the edge keeps no state for it, docs/PROTOCOL.md §12.6), so the edge
  /// does not count them heard: B drops A at remote_offline_after after A's last sealed
  /// datagram. (Version 1 counted A's JOINs, and so anyone's replay of them.) Healed: a
  /// rejoin, and B sees A join again.
  @Test func downlinkBlackhole_interruptedAndLost_peerDropsAtRemoteOffline_initsProveNothing()
    throws
  {
    let world = try FaultWorld("downlinkBlackhole", scale: 0.05, devices: 2)
    let (a, b) = try world.twoMembers()
    Thread.sleep(forTimeInterval: 0.3)
    world.proxy.set(.blackholed, .downlink, device: 0)
    let cut = monotonicSeconds()
    try expectInterruptedThenLost(world, a)
    let dropped = try expectPeerVerdicts(world, b, dropped: true)
    let attempts = world.proxy.deliveries(0).filter {
      $0.time > cut && $0.direction == .uplink && !$0.provesDevice
    }.map(\.time)
    let gaps = zip(attempts, attempts.dropFirst()).map { $1 - $0 }
    #expect(
      attempts.count >= 3 && (gaps.max() ?? 0) <= world.retryCap + 0.1,
      "\(attempts.count) attempts; \(world.replay)")
    try expectRejoin(world, a, b, afterDropAt: dropped)
  }

  /// Both directions die: the seed timeline through the proxy.
  @Test func twoWayBlackhole_interruptedLostDropped_thenRejoin() throws {
    let world = try FaultWorld("twoWayBlackhole", scale: 0.05, devices: 2)
    let (a, b) = try world.twoMembers()
    Thread.sleep(forTimeInterval: 0.3)
    world.proxy.set(.blackholed, device: 0)
    try expectInterruptedThenLost(world, a)
    let dropped = try expectPeerVerdicts(world, b, dropped: true)
    try expectRejoin(world, a, b, afterDropAt: dropped)
  }

  /// A's LEAVE, both of its copies (docs/PROTOCOL.md §4.3), is lost to a dead uplink: A is
  /// DISCONNECTED/LEAVE_CHANNEL at once, and B, with no QUIT to report, drops A at
  /// remote_offline_after after the edge last heard it (docs/BEHAVIOUR.md §3: user-offline comes
  /// even without a goodbye).
  @Test func leaveLost_peerDropsAtRemoteOfflineInsteadOfQuit() throws {
    let world = try FaultWorld("leaveLost", scale: 0.05, devices: 2)
    let (a, b) = try world.twoMembers()
    world.proxy.set(.blackholed, .uplink, device: 0)
    #expect(a.leave() == 0, world.replay)
    #expect(a.states.last == "DISCONNECTED LEAVE_CHANNEL", world.replay)
    let drop = try #require(b.waitFor("user-offline uid=1 reason=DROPPED"), world.replay)
    let heard = try #require(world.proxy.lastFromDevice(0))
    let after = drop.time - heard
    #expect(after >= world.remoteOfflineAfter - 0.005 && after <= world.remoteOfflineAfter + 0.4)
    #expect(b.lines(containing: "reason=QUIT").isEmpty, world.replay)
    print("leaveLost: B dropped A \(ms(after)) after the edge last heard it (rule 1000 ms)")
    #expect(b.leave() == 0, world.replay)
    world.proxy.stop()
    world.edge.stop()
  }

  /// RECONNECTING/INTERRUPTED at interrupted_after and RECONNECTING/LOST (then
  /// connection-lost) at lost_after, both after the last answer the proxy passed.
  private func expectInterruptedThenLost(_ world: FaultWorld, _ a: DeviceProcess) throws {
    let interrupted = try #require(a.waitForState("RECONNECTING", "INTERRUPTED"), world.replay)
    let lost = try #require(a.waitForState("RECONNECTING", "LOST"), world.replay)
    let lastAnswer = try #require(world.proxy.lastAnswerToDevice(0))
    let after = (interrupted.time - lastAnswer, lost.time - lastAnswer)
    #expect(after.0 >= world.interruptedAfter - 0.002 && after.0 <= world.interruptedAfter + 0.3)
    #expect(after.1 >= world.lostAfter - 0.002 && after.1 <= world.lostAfter + 0.3)
    #expect(a.waitFor("connection-lost") != nil, world.replay)
    print(
      "\(world.test): seed \(world.seed): INTERRUPTED +\(ms(after.0)) (rule \(ms(world.interruptedAfter))), "
        + "LOST +\(ms(after.1)) (rule \(ms(world.lostAfter))) after the last answer")
  }

  /// B's verdicts on A; with `dropped`, remote-interrupted and DROPPED at their thresholds
  /// after the edge last heard A (returns when DROPPED came).
  private func expectPeerVerdicts(
    _ world: FaultWorld, _ b: DeviceProcess, dropped: Bool
  ) throws -> Double? {
    guard dropped else {
      expectPeerJudgedFairly(world, b, until: monotonicSeconds())
      return nil
    }
    let drop = try #require(b.waitFor("user-offline uid=1 reason=DROPPED"), world.replay)
    let heard = try #require(world.proxy.lastFromDevice(0))
    let interrupted = try #require(b.first("remote-interrupted uid=1"))
    let after = (interrupted.time - heard, drop.time - heard)
    #expect(after.0 >= world.interruptedAfter - 0.005 && after.0 <= world.interruptedAfter + 0.3)
    #expect(
      after.1 >= world.remoteOfflineAfter - 0.005 && after.1 <= world.remoteOfflineAfter + 0.4)
    print(
      "\(world.test): peer: remote-interrupted +\(ms(after.0)), DROPPED +\(ms(after.1)) "
        + "(rule \(ms(world.remoteOfflineAfter))) after the edge last heard A")
    return drop.time
  }

  /// Healed: CONNECTED/REJOIN_SUCCESS within the retry cap (the longest a backoff waits),
  /// B sees A again if it had dropped it, and A never reported B offline.
  private func expectRejoin(
    _ world: FaultWorld, _ a: DeviceProcess, _ b: DeviceProcess, afterDropAt dropped: Double?
  ) throws {
    let healed = monotonicSeconds()
    world.proxy.heal(0)
    let rejoined = try #require(a.waitForState("CONNECTED", "REJOIN_SUCCESS"), world.replay)
    #expect(
      rejoined.time - healed <= world.retryCap + 0.3,
      "\(ms(rejoined.time - healed)); \(world.replay)")
    if let dropped {
      let back = b.lines.firstIndex { $0.time > dropped } ?? b.lines.count
      #expect(b.waitFor("user-joined uid=1", from: back) != nil, world.replay)
    }
    #expect(a.lines(containing: "user-offline").isEmpty, world.replay)
    print("\(world.test): rejoined \(ms(rejoined.time - healed)) after the heal")
    world.bothLeave(a, b)
  }

  // MARK: - A late device

  /// The device's loop is stopped (SIGSTOP) across its INTERRUPTED deadline while answers
  /// come 700 ms late; when it runs again, an answer that arrived after the deadline waits
  /// on its socket, and the link is clean from then on. Nothing arrived for longer than
  /// interrupted_after, so the rules say RECONNECTING/INTERRUPTED (late, as the loop could
  /// not run before), then a rejoin: an answer that came too late must not erase the
  /// silence before it.
  @Test func deviceLoopLate_anAnswerThatCameTooLate_doesNotEraseTheSilence() throws {
    let world = try FaultWorld("deviceLoopLate", scale: 0.1, devices: 1)
    let a = try world.device("A", index: 0, uid: 1)
    #expect(a.reaches("CONNECTED", "JOIN_SUCCESS"), world.replay)
    Thread.sleep(forTimeInterval: 0.3)
    world.proxy.set(.delay(0.7), .downlink, device: 0)
    let slowed = monotonicSeconds()
    Thread.sleep(forTimeInterval: 0.15)
    a.signal(SIGSTOP)
    let lastAnswer = try #require(world.answers(0).last { $0 < slowed })
    let deadline = lastAnswer + world.interruptedAfter
    let wait = monotonicSeconds() + 2
    while world.answers(0).last.map({ $0 <= deadline }) ?? true && monotonicSeconds() < wait {
      usleep(5000)
    }
    world.proxy.set(.clean, .downlink, device: 0)
    a.signal(SIGCONT)
    let late = try #require(world.answers(0).first { $0 > lastAnswer }, world.replay)
    #expect(late > deadline, "the answer came \(ms(late - lastAnswer)) after the last one")
    let interrupted = a.waitForState("RECONNECTING", "INTERRUPTED", timeout: 2)
    #expect(interrupted != nil, "no INTERRUPTED after a silence of \(ms(late - lastAnswer))")
    #expect((interrupted?.time ?? deadline) >= deadline - 0.002)
    #expect(a.reaches("CONNECTED", "REJOIN_SUCCESS"), world.replay)
    #expect(a.leave() == 0, world.replay)
    world.proxy.stop()
    world.edge.stop()
  }

  // MARK: - The edge killed

  /// SIGKILL, and a new edge on the same port at once (scale 0.25: interrupted after 1 s,
  /// longer than a restart takes): the next heartbeat meets a server that does not know
  /// the session, SESSION_UNKNOWN, so RECONNECTING/KEEP_ALIVE_TIMEOUT within a heartbeat of
  /// the restart and a rejoin; no member is reported offline. (Should the restart take
  /// longer than interrupted_after, INTERRUPTED is the documented outcome instead.)
  @Test func edgeKilled_restartedAtOnce_keepAliveTimeout_thenRejoin() throws {
    let world = try FaultWorld("edgeKilledRestartedAtOnce", scale: 0.25, devices: 2)
    let (a, b) = try world.twoMembers()
    let (killed, back) = try world.restartEdge(down: 0)
    for (index, device) in [a, b].enumerated() {
      let lastAnswer = world.answers(index).last { $0 < killed } ?? 0
      let quick = back < lastAnswer + world.interruptedAfter - world.heartbeat * 1.1
      let reason = quick ? "KEEP_ALIVE_TIMEOUT" : "INTERRUPTED"
      let line = try #require(device.waitForState("RECONNECTING", reason), world.replay)
      if quick {
        #expect(line.time - back <= world.heartbeat * 1.1 + 0.3, "\(ms(line.time - back))")
      }
      #expect(device.reaches("CONNECTED", "REJOIN_SUCCESS"), world.replay)
      print(
        "edgeKilledRestartedAtOnce: \(device.name): \(reason) +\(ms(line.time - back)) after the restart"
      )
    }
    Thread.sleep(forTimeInterval: world.interruptedAfter)
    #expect(
      a.lines(containing: "user-offline").isEmpty && b.lines(containing: "user-offline").isEmpty)
    world.bothLeave(a, b)
  }

  /// SIGKILL, and the edge back only after 1.5 s, longer than remote_offline_after (1 s at
  /// scale 0.05): each device goes INTERRUPTED and LOST at their thresholds after its last
  /// answer and rejoins within the retry cap of the restart; nobody is reported DROPPED,
  /// because the members' clock stops while a device hears nothing from the server.
  @Test func edgeKilled_downLongerThanRemoteOffline_noOneDropped_bothRejoin() throws {
    let world = try FaultWorld("edgeKilledForLong", scale: 0.05, devices: 2)
    let (a, b) = try world.twoMembers()
    let (killed, back) = try world.restartEdge(down: 1.5)
    for (index, device) in [a, b].enumerated() {
      let lastAnswer = try #require(world.answers(index).last { $0 < killed })
      let interrupted = try #require(device.first("state RECONNECTING INTERRUPTED"))
      let lost = try #require(device.first("state RECONNECTING LOST"))
      let after = (interrupted.time - lastAnswer, lost.time - lastAnswer)
      #expect(after.0 >= world.interruptedAfter - 0.002 && after.0 <= world.interruptedAfter + 0.3)
      #expect(after.1 >= world.lostAfter - 0.002 && after.1 <= world.lostAfter + 0.3)
      let rejoined = try #require(device.waitForState("CONNECTED", "REJOIN_SUCCESS"), world.replay)
      #expect(rejoined.time - back <= world.retryCap + 0.3, "\(ms(rejoined.time - back))")
      print(
        "edgeKilledForLong: \(device.name): INTERRUPTED +\(ms(after.0)), LOST +\(ms(after.1)) "
          + "after the last answer; rejoined \(ms(rejoined.time - back)) after the restart")
    }
    Thread.sleep(forTimeInterval: world.remoteOfflineAfter)
    #expect(
      a.lines(containing: "user-offline").isEmpty && b.lines(containing: "user-offline").isEmpty)
    world.bothLeave(a, b)
  }
}

/// The address a device's route to the edge leaves from changes, inside a network
/// namespace the test makes (edge and both devices in it; root and iproute2 needed, as CI
/// has; without them the suite reports itself skipped, never passed, and under
/// `make test` it fails). The driver lets a burst of netlink messages settle for 100 ms,
/// then both devices, whose route now has another source, go
/// RECONNECTING/CLIENT_IP_ADDRESS_CHANGED and rejoin under the same cookie (resumed: the
/// members see nothing); and again when the source changes back.
@Suite(
  Lab.enabled,
  .enabled(if: NetworkNamespace.available || Lab.required, "needs root and iproute2"))
struct AddressChangeFaultTests {
  @Test func routeSourceChangedTwice_bothRejoinEachTime_noMemberOffline() throws {
    let namespace = try NetworkNamespace()
    let scale = 0.05
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale, launcher: namespace.launcher)
    defer { edge.stop() }
    func device(_ name: String, uid: UInt32) throws -> DeviceProcess {
      let token = try edge.token(channel: Lab.channel, uid: uid, expireSeconds: 3600)
      return try DeviceProcess(
        binary: Lab.device, name: name, server: edge.address, appID: edge.appID,
        channel: Lab.channel, uid: uid, token: token, scale: scale, launcher: namespace.launcher)
    }
    let a = try device("A", uid: 31)
    let b = try device("B", uid: 32)
    #expect(a.reaches("CONNECTED", "JOIN_SUCCESS") && b.reaches("CONNECTED", "JOIN_SUCCESS"))
    #expect(a.waitFor("user-joined uid=32") != nil && b.waitFor("user-joined uid=31") != nil)
    // An address the route does not use: nothing (and its burst has settled).
    try namespace.addLoopbackAddress("127.0.0.2/8")
    Thread.sleep(forTimeInterval: 0.5)
    #expect(!a.states.contains { $0.hasPrefix("RECONNECTING") })
    for source in ["127.0.0.2", "127.0.0.1"] {
      let from = (a.lines.count, b.lines.count)
      let changed = monotonicSeconds()
      try namespace.setLoopbackSource(source)
      for (device, index) in [(a, from.0), (b, from.1)] {
        let noticed = try #require(
          device.waitForState("RECONNECTING", "CLIENT_IP_ADDRESS_CHANGED", from: index))
        let rejoined = try #require(device.waitForState("CONNECTED", "REJOIN_SUCCESS", from: index))
        // The debounce (100 ms) after the change, late by at most a generous margin: make
        // test runs several test processes at once, and with eight a device once noticed
        // the change 0.4 s past its debounce.
        #expect(noticed.time - changed >= 0.1 && noticed.time - changed <= 0.1 + 1.0)
        #expect(rejoined.time - noticed.time <= 1.0)
        print(
          "addressChange to \(source): \(device.name): CLIENT_IP_ADDRESS_CHANGED "
            + "+\(ms(noticed.time - changed)), REJOIN_SUCCESS +\(ms(rejoined.time - changed))")
      }
    }
    Thread.sleep(forTimeInterval: 20 * scale)
    for device in [a, b] {
      #expect(!device.states.contains { $0.hasSuffix("INTERRUPTED") || $0.hasPrefix("FAILED") })
      #expect(device.lines(containing: "user-offline").isEmpty)
      #expect(device.lines(containing: "remote-interrupted").isEmpty)
    }
    let before = b.lines.count
    #expect(a.leave() == 0)
    #expect(b.waitFor("user-offline uid=31 reason=QUIT", from: before) != nil)
    #expect(b.leave() == 0)
  }
}
