// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// What a client sends in one server session must not act on another held under the same
/// cookie: a LOGIN_HEARTBEAT and a CHANNEL_OPERATION name their server session
/// (docs/PROTOCOL.md §6.2, §6.4). Before they did, the edge could not tell:
/// - Found by the login simulator (`tether-sim --login`, seed 1036 before the simulator
///   dropped such datagrams): a LOGIN_HEARTBEAT the client sent in a server session the
///   edge has since lost, delivered late, confirmed the new session that the client's
///   RELOGIN made; its LOGIN_ACCEPT (not RESUMED) lost, the next RELOGIN was answered
///   RESUMED, and the client kept its channels and event count in a session that had none.
/// - Found by `make soak LOGIN=1` (seeds 32175, 59033): after a restart, a LOGIN of the
///   cookie (a late copy, or a network change's while CONNECTED) made a new session whose
///   LOGIN_ACCEPT was lost; the client went on heartbeating in the session it had, which
///   confirmed the new one, and its channels disagreed with the server's for good.
struct EdgeLoginStaleConfirmationTests {
  typealias Bench = LoginBench
  static let alice: UInt64 = 0xA11CE

  /// Alice logged in, in `room`; the edge restarts (numbering its sessions from elsewhere,
  /// as a real one does from a random start) and her RELOGIN makes a new session whose
  /// LOGIN_ACCEPT she never gets. Returns the lost session's number.
  static func restartedWithAcceptLost(_ bench: inout Bench) -> UInt32 {
    bench.logIn("alice", cookie: Self.alice, from: Bench.address(0))
    bench.send(Bench.join("room", sequence: 1), cookie: Self.alice, from: Bench.address(0))
    #expect(
      bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [Bench.channel("room")])
    let lost = bench.session(Self.alice) ?? 0
    var config = bench.server.config
    config.firstLoginSession = lost &+ 1_000_003
    bench.server = EdgeServer(config: config, crypto: SimCrypto(seed: 2))
    bench.run(for: .milliseconds(100))
    let first = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(
      first.map(\.message) == [
        .loginAccept(
          LoginAccept(
            serverTimeMs: 100, tokenTimeLeftMs: 0, resumed: false, session: lost &+ 1_000_003))
      ])
    return lost
  }

  @Test func aHeartbeatFromALostServerSession_doesNotMakeTheNextReloginResumed() {
    var bench = Bench()
    let lost = Self.restartedWithAcceptLost(&bench)
    // A heartbeat she sent to the lost session arrives late: SESSION_UNKNOWN (she is
    // reconnecting and ignores it), nothing taken or confirmed.
    let late = bench.sendAsIs(
      .loginHeartbeat(sequence: 7, session: lost, eventsReceived: 3), cookie: Self.alice,
      from: Bench.address(0))
    #expect(late.map(\.message) == [.sessionUnknown])
    #expect(bench.server.counters.otherServerSession == 1)
    // Her next RELOGIN is not told RESUMED: she never had this session's first
    // LOGIN_ACCEPT, and the session has none of her channels.
    let second = bench.send(
      Bench.login("alice", relogin: true), cookie: Self.alice, from: Bench.address(0))
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [])
    #expect(
      second.map(\.message) == [
        .loginAccept(
          LoginAccept(
            serverTimeMs: 100, tokenTimeLeftMs: 0, resumed: false, session: lost &+ 1_000_003))
      ])
  }

  /// Seed 59033's shape: she was CONNECTED in the lost session and goes on in it. Her
  /// heartbeat is answered SESSION_UNKNOWN (she logs in again and gets the first
  /// LOGIN_ACCEPT); her channel operation is not applied in the new session.
  @Test func aClientGoingOnInTheLostSession_isToldSessionUnknown_andNothingIsApplied() {
    var bench = Bench()
    let lost = Self.restartedWithAcceptLost(&bench)
    let heartbeat = bench.sendAsIs(
      .loginHeartbeat(sequence: 9, session: lost, eventsReceived: 0), cookie: Self.alice,
      from: Bench.address(0))
    #expect(heartbeat.map(\.message) == [.sessionUnknown])
    let operation = ChannelOperation(
      session: lost, sequence: 2, kind: .join, channel: Bench.channel("other"))
    let answer = bench.sendAsIs(
      .channelOperation(operation), cookie: Self.alice, from: Bench.address(0))
    #expect(answer.map(\.message) == [.sessionUnknown])
    #expect(bench.server.loginSession(cookie: bench.id(Self.alice))?.channels == [])
    #expect(bench.server.counters.otherServerSession == 2)
    // Her heartbeat in the new session confirms it; a late one of the lost session is
    // then dropped without an answer (she has shown she is in the new one).
    bench.send(
      .loginHeartbeat(sequence: 10, eventsReceived: 0), cookie: Self.alice, from: Bench.address(0))
    let late = bench.sendAsIs(
      .loginHeartbeat(sequence: 8, session: lost, eventsReceived: 0), cookie: Self.alice,
      from: Bench.address(0))
    #expect(late.isEmpty)
    #expect(bench.server.counters.otherServerSession == 3)
  }
}
