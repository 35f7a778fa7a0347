// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The checker itself (LoginInvariants), on what the login simulator found it gets wrong.
@Suite struct LoginInvariantsTests {
  typealias H = LoginHarness

  /// Found by `tether-sim --login` (seed 171160): MEMBER_EVENTS that arrive at the very
  /// instant the session's INTERRUPTED deadline falls due. The session takes the events
  /// while CONNECTED, then the deadline fires in the same call (RECONNECTING and a LOGIN):
  /// more notifications than the batch has entries, but no more member events.
  @Test func memberEvents_arrivingAsTheInterruptionFallsDue_areNotTooMany() {
    var h = H.connected()
    try! h.join()
    h.deliver(.channelAck(sequence: 1))
    // Silence (heartbeats unanswered) up to the instant of INTERRUPTED.
    let interrupted = h.now + h.session.config.interruptedAfter
    h.run(until: Instant(nanoseconds: interrupted.nanoseconds - 1))
    #expect(h.state == .connected)
    h.now = interrupted
    var invariants = LoginInvariants()
    _ = invariants.check(
      h.session, before: h.state, step: .advance, output: LoginOutput(), now: h.now)
    let batch = try! MemberEvents(
      firstSequence: 1,
      entries: [MemberEvent.Entry(kind: .joined, channel: Fixture.channel, userID: H.otherUser)])
    let bytes = Packet(cookie: h.cookie, message: .memberEvents(batch)).encoded
    var output = LoginOutput()
    h.session.receive(datagram: bytes[...], now: h.now, into: &output)
    #expect(
      output.notifications.first
        == .memberJoined(channel: Fixture.channel.bytes[...], userID: H.otherUser.bytes[...]))
    #expect(h.session.state == .reconnecting)
    let violations = invariants.check(
      h.session, before: .connected, step: .datagram(.memberEvents(batch)), output: output,
      now: h.now)
    #expect(!violations.contains("more member events than sent"), "\(violations)")
  }
}
