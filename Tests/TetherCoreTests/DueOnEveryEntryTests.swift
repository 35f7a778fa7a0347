// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

/// Every entry point of a session that takes `now` first runs what fell due by then, so
/// that afterwards ``LinkSession/nextDeadline`` is later than `now`, whatever the entry
/// point made of its input: a packet out of place, one of an earlier server session, one
/// with another cookie, bytes that do not decode. The driver runs overdue deadlines before
/// it hands over a datagram, so from C this cannot show: it is the core's own contract.
@Suite struct DueOnEveryEntryTests {
  /// A login session still CONNECTING (no answer), 7 s after the login call: its 6 s login
  /// timeout is overdue when `message` arrives.
  static func overdueLogin(_ message: Message) -> LoginHarness {
    var h = LoginHarness()
    try! h.login()
    h.now = .ms(7000)
    h.deliver(message)
    return h
  }

  static let timedOut = LoginNotification.connectionStateChanged(.disconnected, .loginTimeout)

  /// The five packets a CONNECTING login session has no use for, the regression of the
  /// drift between the profiles: the login session returned before running its deadlines.
  @Test(arguments: [
    Message.heartbeatAck(sequence: 1, serverTimeMs: 0),
    .channelAck(sequence: 1),
    .memberEvents(
      try! MemberEvents(
        firstSequence: 1,
        entries: [
          MemberEvent.Entry(kind: .joined, channel: Fixture.channel, userID: LoginHarness.otherUser)
        ]
      )),
    .sessionUnknown,
    .kick(.sameUID),
  ])
  func login_packetOutOfPlace_runsTheOverdueLoginTimeout(_ message: Message) {
    let h = Self.overdueLogin(message)
    #expect(h.state == .disconnected && h.reason == .loginTimeout)
    #expect(h.time(of: .loginResult(.timeout)) == .ms(7000))
    #expect(h.time(of: Self.timedOut) == .ms(7000))
    #expect(h.session.nextDeadline == nil)
  }

  /// CONNECTED, then silent past the interrupted deadline: a CHANNEL_ACK of an earlier
  /// server session (set aside as stale) still runs the heartbeat and INTERRUPTED that fell
  /// due before it.
  @Test func login_staleChannelAck_runsTheOverdueInterruption() {
    var h = LoginHarness.connected()
    let accepted = h.now
    h.now = accepted + .seconds(5)
    h.deliver(.channelAck(session: 99, sequence: 1))
    #expect(h.state == .reconnecting && h.reason == .interrupted)
    #expect(h.time(of: .connectionStateChanged(.reconnecting, .interrupted)) == h.now)
    #expect((h.session.nextDeadline ?? .zero) > h.now)
  }

  /// The channel session always did: a HEARTBEAT_ACK while CONNECTING is ignored, and the
  /// connection-lost report that fell due before it goes out.
  @Test func channel_packetOutOfPlace_runsTheOverdueDeadlines() {
    var h = Harness()
    try! h.join()
    h.now = .ms(11_000)
    h.deliver(.heartbeatAck(sequence: 1, serverTimeMs: 0))
    #expect(h.time(of: .connectionLost) == .ms(11_000))
    #expect((h.session.nextDeadline ?? .zero) > h.now)
  }

  // MARK: - What was the same in both profiles, and wrong in both

  /// A packet with another cookie is counted and ignored; what fell due still runs.
  @Test func channel_foreignPacket_runsTheOverdueDeadlines() {
    var h = Harness.connected()
    h.now = h.now + .seconds(5)
    h.deliver(.heartbeatAck(sequence: 1, serverTimeMs: 0), cookie: h.cookie ^ 1)
    #expect(h.session.counters.foreign == 1)
    #expect(h.state == .reconnecting && h.reason == .interrupted)
    #expect((h.session.nextDeadline ?? .zero) > h.now)
  }

  @Test func login_foreignPacket_runsTheOverdueDeadlines() {
    var h = LoginHarness()
    try! h.login()
    h.now = .ms(7000)
    h.deliver(.heartbeatAck(sequence: 1, serverTimeMs: 0), cookie: h.cookie ^ 1)
    #expect(h.session.counters.foreign == 1)
    #expect(h.state == .disconnected && h.reason == .loginTimeout)
  }

  /// Bytes that do not decode are counted and their error returned; what fell due runs.
  @Test func channel_malformedDatagram_runsTheOverdueDeadlines() {
    var h = Harness.connected()
    h.now = h.now + .seconds(5)
    let error = h.step { s, now, out in
      s.receive(datagram: [0x54, 0x48, 1][...], now: now, into: &out)
    }
    #expect(error != nil && h.session.counters.malformed == 1)
    #expect(h.state == .reconnecting && h.reason == .interrupted)
  }

  @Test func login_malformedDatagram_runsTheOverdueDeadlines() {
    var h = LoginHarness()
    try! h.login()
    h.now = .ms(7000)
    let error = h.step { s, now, out in
      s.receive(datagram: [0x54, 0x48, 1][...], now: now, into: &out)
    }
    #expect(error != nil && h.session.counters.malformed == 1)
    #expect(h.state == .disconnected && h.reason == .loginTimeout)
  }

  /// A new address for the server while CONNECTED changes nothing about the link (it keeps
  /// its server until it stops answering), but the deadlines due by then still run.
  @Test func channel_endpointResolvedWhileConnected_runsTheOverdueDeadlines() {
    var h = Harness.connected()
    h.now = h.now + .seconds(5)
    h.step { s, now, out in s.endpointResolved(now: now, into: &out) }
    #expect(h.state == .reconnecting && h.reason == .interrupted)
    #expect((h.session.nextDeadline ?? .zero) > h.now)
  }
}
