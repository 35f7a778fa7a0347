// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The channels of login sessions: CHANNEL_OPERATION applied once each and in order,
/// member events pushed once and sent again only in answer to a heartbeat, the bounds of
/// the event queue and of channels per session (docs/PROTOCOL.md §6).
struct EdgeLoginChannelTests {
  typealias Bench = LoginBench
  static let alice: UInt64 = 0xA11CE
  static let bob: UInt64 = 0xB0B
  static let aliceAt = Bench.address(0)
  static let bobAt = Bench.address(1)

  /// Bob logged in and in `channel`, then Alice logged in (in no channel).
  static func bobInThenAlice(_ channel: String) -> Bench {
    var bench = Bench()
    bench.logIn("bob", cookie: bob, from: bobAt)
    bench.send(Bench.join(channel, sequence: 1), cookie: bob, from: bobAt)
    bench.logIn("alice", cookie: alice, from: aliceAt)
    return bench
  }

  static func acks(_ sent: [Bench.Sent]) -> [UInt32] {
    sent.compactMap { if case .channelAck(_, let sequence) = $0.message { sequence } else { nil } }
  }

  // MARK: - Operations

  @Test func operations_areAppliedOnceEach_inOrder_despiteRepeatsAndReordering() {
    var bench = Bench()
    bench.logIn("bob", cookie: Self.bob, from: Self.bobAt)
    bench.send(Bench.join("a", sequence: 1), cookie: Self.bob, from: Self.bobAt)
    bench.send(Bench.join("b", sequence: 2), cookie: Self.bob, from: Self.bobAt)
    bench.logIn("alice", cookie: Self.alice, from: Self.aliceAt)
    // Alice's operations arrive 2 before 1, then each again, then 3 (leave a) twice.
    let order: [(Message, UInt32)] = [
      (Bench.join("b", sequence: 2), 0), (Bench.join("a", sequence: 1), 1),
      (Bench.join("a", sequence: 1), 1), (Bench.join("b", sequence: 2), 2),
      (Bench.join("b", sequence: 2), 2), (Bench.leave("a", sequence: 3), 3),
      (Bench.join("a", sequence: 1), 3), (Bench.leave("a", sequence: 3), 3),
      (Bench.join("c", sequence: 5), 3),
    ]
    for (message, expectedAck) in order {
      let out = bench.send(message, cookie: Self.alice, from: Self.aliceAt)
      #expect(Self.acks(out) == [expectedAck], "\(message)")
    }
    #expect(
      bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [Bench.channel("b")])
    #expect(bench.server.counters.channelOperationsUnordered == 6)
    #expect(
      bench.events(to: Self.bob) == [
        "1 joined a alice", "2 joined b alice", "3 left a alice",
      ])
  }

  @Test func joiningAChannelTwice_orLeavingOneNotJoined_changesNothing() {
    var bench = Self.bobInThenAlice("a")
    for (sequence, message) in [
      Bench.join("a", sequence: 1), Bench.join("a", sequence: 2), Bench.leave("z", sequence: 3),
    ].enumerated() {
      let out = bench.send(message, cookie: Self.alice, from: Self.aliceAt)
      #expect(Self.acks(out) == [UInt32(sequence + 1)])
    }
    #expect(bench.events(to: Self.bob) == ["1 joined a alice"])
  }

  @Test func aJoiningUser_getsNoEventsAboutTheMembersAlreadyThere() {
    var bench = Self.bobInThenAlice("a")
    bench.send(Bench.join("a", sequence: 1), cookie: Self.alice, from: Self.aliceAt)
    #expect(bench.events(to: Self.alice).isEmpty)
    bench.send(Bench.leave("a", sequence: 2), cookie: Self.bob, from: Self.bobAt)
    #expect(bench.events(to: Self.alice) == ["1 left a bob"])
  }

  @Test func theSeventeenthChannel_isAcknowledged_butNotApplied() {
    var bench = Self.bobInThenAlice("c17")
    for n in 1...17 {
      let out = bench.send(
        Bench.join("c\(n)", sequence: UInt32(n)), cookie: Self.alice, from: Self.aliceAt)
      #expect(Self.acks(out) == [UInt32(n)])
    }
    #expect(
      bench.server.loginSession(cookie: bench.id(Self.alice))?.channels.count
        == SessionTable.maximumChannels)
    #expect(bench.server.counters.channelOperationsOverLimit == 1)
    #expect(bench.events(to: Self.bob).isEmpty)
    // After a leave there is room again.
    bench.send(Bench.leave("c1", sequence: 18), cookie: Self.alice, from: Self.aliceAt)
    bench.send(Bench.join("c17", sequence: 19), cookie: Self.alice, from: Self.aliceAt)
    #expect(bench.events(to: Self.bob) == ["1 joined c17 alice"])
  }

  @Test func loginChannels_andChannelSessionChannels_areUnrelated() throws {
    var bench = Bench()
    let join = JoinRequest(
      uid: 5, appID: Fixture.appID, channel: Fixture.channel,
      token: World.token(uid: 5, expiresAt: 0),
      isRejoin: false)
    bench.send(.join(join), cookie: 50, from: Bench.address(9))
    bench.logIn("alice", cookie: Self.alice, from: Self.aliceAt)
    bench.send(Bench.join("lobby", sequence: 1), cookie: Self.alice, from: Self.aliceAt)
    bench.logIn("bob", cookie: Self.bob, from: Self.bobAt)
    bench.send(Bench.join("lobby", sequence: 1), cookie: Self.bob, from: Self.bobAt)
    #expect(bench.server.members(of: Fixture.channel) == [5])
    #expect(
      bench.server.loginMembers(of: Fixture.channel) == [Bench.user("alice"), Bench.user("bob")])
    // The channel session hears of no login user, and the login users of no uid.
    #expect(!bench.messages(to: 50).contains { if case .memberEvents = $0 { true } else { false } })
    #expect(!bench.messages(to: 50).contains { if case .presence = $0 { true } else { false } })
    bench.run(for: .seconds(3))
    #expect(
      !bench.messages(to: Self.alice).contains { if case .presence = $0 { true } else { false } })
    #expect(bench.events(to: Self.alice) == ["1 joined lobby bob"])
  }

  // MARK: - Member events

  @Test func events_arePushedOnce_andSentAgainOnlyInAnswerToAHeartbeat() {
    var bench = Self.bobInThenAlice("a")
    let out = bench.send(Bench.join("a", sequence: 1), cookie: Self.alice, from: Self.aliceAt)
    // The push went to Bob's address, under his cookie.
    #expect(out.contains { $0.to == Self.bobAt && $0.cookie == Self.bob })
    #expect(bench.events(to: Self.bob) == ["1 joined a alice"])
    // Lost, say. The timers alone never send it again.
    bench.run(for: .seconds(5))
    #expect(bench.events(to: Self.bob) == ["1 joined a alice"])
    #expect(bench.server.counters.memberEventsResent == 0)
    // Bob's heartbeat says he has none: HEARTBEAT_ACK, then the batch again.
    let answer = bench.send(
      .loginHeartbeat(sequence: 7, eventsReceived: 0), cookie: Self.bob, from: Self.bobAt)
    #expect(answer.count == 2)
    #expect(answer.first?.message == .heartbeatAck(sequence: 7, serverTimeMs: 5000))
    #expect(bench.events(to: Self.bob) == ["1 joined a alice", "1 joined a alice"])
    #expect(bench.server.counters.memberEventsResent == 1)
    // Once he has it, a heartbeat draws only the ACK.
    let taken = bench.send(
      .loginHeartbeat(sequence: 8, eventsReceived: 1), cookie: Self.bob, from: Self.bobAt)
    #expect(taken.map(\.message) == [.heartbeatAck(sequence: 8, serverTimeMs: 5000)])
    // A late heartbeat that says less changes nothing.
    let late = bench.send(
      .loginHeartbeat(sequence: 6, eventsReceived: 0), cookie: Self.bob, from: Self.bobAt)
    #expect(late.count == 1)
    #expect(bench.server.tableCounts.queuedEvents == 0)
  }

  @Test func aHeartbeat_getsTheOldestUntakenEvents_inOneDatagram() {
    var bench = Bench()
    bench.logIn("bob", cookie: Self.bob, from: Self.bobAt)
    bench.send(Bench.join("a", sequence: 1), cookie: Self.bob, from: Self.bobAt)
    for n in 1...5 {
      bench.logIn("user\(n)", cookie: UInt64(100 + n), from: Bench.address(10 + n))
      bench.send(Bench.join("a", sequence: 1), cookie: UInt64(100 + n), from: Bench.address(10 + n))
    }
    let answer = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 2), cookie: Self.bob, from: Self.bobAt)
    #expect(answer.count == 2)
    guard case .memberEvents(let batch)? = answer.last?.message else {
      Issue.record("no MEMBER_EVENTS: \(answer)")
      return
    }
    #expect(
      batch.map(Bench.describe) == ["3 joined a user3", "4 joined a user4", "5 joined a user5"])
  }

  @Test func aBatchBiggerThanOneDatagram_isSplit_andAHeartbeatSendsOnlyTheFirst() {
    var bench = Bench()
    let long = String(repeating: "x", count: 60)
    bench.logIn("bob", cookie: Self.bob, from: Self.bobAt)
    bench.send(Bench.join(long, sequence: 1), cookie: Self.bob, from: Self.bobAt)
    // 64-byte user ids: each event takes 3 + 60 + 64 = 127 bytes, 9 to a datagram.
    let users = (11...30).map { "u\($0)-" + String(repeating: "y", count: 60) }
    for (n, user) in users.enumerated() {
      bench.logIn(user, cookie: UInt64(100 + n), from: Bench.address(10 + n))
      bench.send(
        Bench.join(long, sequence: 1), cookie: UInt64(100 + n), from: Bench.address(10 + n))
    }
    // Each join was pushed at once, in a datagram of its own.
    #expect(bench.events(to: Self.bob).count == 20)
    let answer = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.bob, from: Self.bobAt)
    guard case .memberEvents(let batch)? = answer.last?.message else {
      Issue.record("no MEMBER_EVENTS: \(answer)")
      return
    }
    #expect(batch.firstSequence == 1)
    #expect(batch.count == MemberEvents.capacity / 127)
    #expect(
      answer.allSatisfy { Packet(cookie: $0.cookie, message: $0.message).encoded.count <= 1200 })
  }

  // MARK: - The event queue's bound

  /// Bob never says he took anything: his queue fills. The event past the bound ends his
  /// session (Alice, in the channel, gets *left*), and his next heartbeat gets
  /// SESSION_UNKNOWN, so his client logs in again afresh.
  @Test func anEventPastTheQueuesBound_endsThatSession() {
    var bench = Self.bobInThenAlice("a")
    var sequence: UInt32 = 0
    for n in 0..<MemberEventQueue.capacity {
      sequence += 1
      let message =
        n % 2 == 0 ? Bench.join("a", sequence: sequence) : Bench.leave("a", sequence: sequence)
      bench.send(message, cookie: Self.alice, from: Self.aliceAt)
      bench.send(
        .loginHeartbeat(sequence: 0, eventsReceived: 0), cookie: Self.bob, from: Self.bobAt)
    }
    #expect(bench.server.tableCounts.queuedEvents == MemberEventQueue.capacity)
    #expect(bench.server.loginSessionCount == 2)
    // Alice is out of "a" now (256 is even); her join is the 257th event for Bob.
    sequence += 1
    let out = bench.send(
      Bench.join("a", sequence: sequence), cookie: Self.alice, from: Self.aliceAt)
    #expect(Self.acks(out) == [sequence])
    #expect(bench.server.loginSessionCount == 1)
    #expect(bench.server.counters.eventQueueOverflows == 1)
    #expect(bench.events(to: Self.alice) == ["1 left a bob"])
    #expect(bench.server.tableCounts.queuedEvents == 1)
    // Bob's session is gone: once its id is older than a ticket lifetime (§12.9), his next
    // heartbeat gets its RESET.
    bench.now = bench.now + .seconds(11)
    let heartbeat = bench.send(
      .loginHeartbeat(sequence: 1, eventsReceived: 0), cookie: Self.bob, from: Self.bobAt)
    #expect(heartbeat.map(\.message) == [.sessionUnknown])
  }

  @Test func aClientThatTakesItsEvents_isNeverCutOff() {
    var bench = Self.bobInThenAlice("a")
    var sequence: UInt32 = 0
    for n in 0..<(3 * MemberEventQueue.capacity) {
      sequence += 1
      let message =
        n % 2 == 0 ? Bench.join("a", sequence: sequence) : Bench.leave("a", sequence: sequence)
      bench.send(message, cookie: Self.alice, from: Self.aliceAt)
      bench.send(
        .loginHeartbeat(sequence: sequence, eventsReceived: sequence), cookie: Self.bob,
        from: Self.bobAt)
    }
    #expect(bench.server.loginSessionCount == 2)
    #expect(bench.server.counters.eventQueueOverflows == 0)
    #expect(bench.server.tableCounts.queuedEvents == 0)
  }

  @Test func memberEventQueue_acknowledge_ignoresCountsOutsideWhatWasNumbered() {
    var queue = MemberEventQueue()
    let entry = MemberEvent.Entry(
      kind: .joined, channel: Bench.channel("a"), userID: Bench.user("u"))
    for expected: UInt32 in 1...3 { #expect(queue.append(entry) == expected) }
    queue.acknowledge(9)
    #expect(queue.pending.count == 3)
    queue.acknowledge(2)
    #expect(queue.firstSequence == 3)
    queue.acknowledge(1)
    #expect(queue.firstSequence == 3)
    #expect(queue.batch(from: 2) == nil)
    #expect(queue.batch(from: 3)?.firstSequence == 3)
    queue.acknowledge(3)
    #expect(queue.pending.isEmpty)
    #expect(queue.batch(from: 4) == nil)
  }
}
