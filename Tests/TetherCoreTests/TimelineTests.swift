// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The timeline (docs/BEHAVIOUR.md §1.4, T0–T7) at *default* thresholds, in virtual time: client A
/// joins a channel where client B already is, through the real edge server 100 ms away
/// each way; A's link is cut 5 s after its join. The instants below follow from the
/// defaults: heartbeats every second from the accept (acks back 200 ms later), presence
/// digests every second. The join is protocol version 2's, two round trips (INIT and
/// RESPONSE, CONFIRM and ACCEPT: docs/PROTOCOL.md §12.2), so the accept comes 400 ms after
/// the join, where version 1's one round trip took 200 ms.
@Suite struct TimelineTests {
  static let a = SeedTimeline.deviceA
  static let b = SeedTimeline.deviceB

  static func play(healAt heal: Instant? = nil, until end: Instant) throws -> SimWorld {
    try SeedTimeline.play(healAt: heal, until: end)
  }

  @Test func seedTimeline_linkCut_interruptedLostDroppedThenGiveUp() throws {
    let sim = try Self.play(until: .s(1300))
    let a = sim.clients[Self.a]
    let b = sim.clients[Self.b]
    // T0 join, T1 accept at +400 ms (two round trips) with the join callback.
    #expect(a.time(of: .connectionStateChanged(.connecting, .connecting)) == .s(10))
    #expect(a.time(of: .connectionStateChanged(.connected, .joinSuccess)) == .ms(10_400))
    #expect(
      a.time(of: .joinChannelSuccess(channel: Fixture.channel, uid: 1, elapsedMs: 400))
        == .ms(10_400))
    // T2: the peer sees the join (the server relays it as soon as it accepts, at the
    // CONFIRM, 10.3 s).
    #expect(b.time(of: .userJoined(uid: 1, elapsedMs: 10_400)) == .ms(10_400))
    // A also learns of B, from the snapshot that follows the accept.
    #expect(a.time(of: .userJoined(uid: 2, elapsedMs: 400)) == .ms(10_400))
    // T3 at 15 s: the last data A received is the ack of its 14.4 s heartbeat, at 14.6 s.
    // T4 = last data + 4 s.
    #expect(a.time(of: .connectionStateChanged(.reconnecting, .interrupted)) == .ms(18_600))
    // T5 = last data + 10 s: LOST, then connection-lost; rejoining goes on.
    #expect(a.time(of: .connectionStateChanged(.reconnecting, .lost)) == .ms(24_600))
    #expect(a.time(of: .connectionLost) == .ms(24_600))
    // T6 at the peer: the server last heard A at 14.5 s; B learns it 100 ms later, so A's
    // last data as B knows it is 14.6 s: interrupted at +4 s, DROPPED at +20 s.
    #expect(b.time(of: .remoteMemberInterrupted(uid: 1)) == .ms(18_600))
    #expect(b.time(of: .userOffline(uid: 1, reason: .dropped)) == .ms(34_600))
    // T7 = last data + 20 min: FAILED/JOIN_FAILED, and retries stop.
    #expect(a.time(of: .connectionStateChanged(.failed, .joinFailed)) == .ms(1_214_600))
    #expect(a.joins(since: .ms(1_214_601)).isEmpty)
    #expect(a.joins(since: .ms(18_600)).count > 100)
    // B never moved.
    #expect(
      b.stateChanges == [
        .connectionStateChanged(.connecting, .connecting),
        .connectionStateChanged(.connected, .joinSuccess),
      ])
    // A's whole life, in order.
    #expect(
      a.stateChanges == [
        .connectionStateChanged(.connecting, .connecting),
        .connectionStateChanged(.connected, .joinSuccess),
        .connectionStateChanged(.reconnecting, .interrupted),
        .connectionStateChanged(.reconnecting, .lost),
        .connectionStateChanged(.failed, .joinFailed),
      ])
  }

  @Test func seedTimeline_linkHealsAt15s_rejoinSuccess_andThePeerSeesNoDrop() throws {
    var sim = try Self.play(healAt: .s(25), until: .s(60))
    var a = sim.clients[Self.a]
    let b = sim.clients[Self.b]
    #expect(a.time(of: .connectionStateChanged(.reconnecting, .interrupted)) == .ms(18_600))
    #expect(a.time(of: .connectionStateChanged(.reconnecting, .lost)) == .ms(24_600))
    // Back after the heal, within one backoff cap (8 s) plus two round trips.
    let rejoined = try #require(a.time(of: .connectionStateChanged(.connected, .rejoinSuccess)))
    #expect(rejoined > .s(25) && rejoined <= .ms(33_400))
    #expect(
      a.time { if case .rejoinChannelSuccess(_, 1, _) = $0 { true } else { false } } == rejoined)
    #expect(sim.accepts(to: Self.a).last?.resumed == true)
    // The peer saw A go quiet and come back, and never saw it leave.
    let resumed = try #require(b.time(of: .remoteMemberResumed(uid: 1)))
    #expect(resumed > .s(25) && resumed < .ms(34_600))
    #expect(!b.notifications.contains { if case .userOffline = $0 { true } else { false } })
    #expect(b.notifications.filter { $0 == .userJoined(uid: 1, elapsedMs: 10_400) }.count == 1)
    // A leaves: the peer hears QUIT one server hop later.
    sim.leave(Self.a)
    sim.run(until: .s(61))
    a = sim.clients[Self.a]
    #expect(
      a.mainNotifications.suffix(2) == [
        .connectionStateChanged(.disconnected, .leaveChannel), .leaveChannel,
      ])
    #expect(sim.clients[Self.b].time(of: .userOffline(uid: 1, reason: .quit)) == .ms(60_200))
  }

  @Test func peerKilledWithoutGoodbye_isDroppedAt20s_andTheOthersNeverInterrupt() throws {
    var sim = SeedTimeline.world(clients: 3)
    for i in 0..<3 { try SeedTimeline.join(&sim, i, uid: UInt32(i + 1)) }
    sim.run(until: .ms(5_050))
    // Client 0 vanishes: nothing more from it, no leave.
    sim.linkUp[0] = false
    sim.run(until: .s(40))
    for i in 1..<3 {
      let h = sim.clients[i]
      #expect(h.notifications.contains(.userOffline(uid: 1, reason: .dropped)))
      #expect(!h.notifications.contains(.userOffline(uid: i == 1 ? 3 : 2, reason: .dropped)))
      #expect(h.state == .connected)
    }
  }
}
