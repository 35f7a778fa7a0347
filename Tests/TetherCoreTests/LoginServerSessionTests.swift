// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// MEMBER_EVENTS and CHANNEL_ACK are numbered per server session, from 1 each time. One
/// sent before the server lost the session, and delivered after the new session's
/// LOGIN_ACCEPT, must not be taken as the new session's: each carries its server session's
/// number (LoginAccept.session), and the client sets aside what is not the current one's.
/// (Found by the property tests' model server; these failed before the number existed.)
@Suite struct LoginServerSessionTests {
  typealias H = LoginHarness
  static let room = Fixture.channel

  /// Connected to server session 7, in `lobby` (acknowledged), bob's join (event 1)
  /// delivered; then the server loses the session and session 8 accepts the relogin.
  static func afterANewServerSession() -> H {
    var h = H()
    try! h.login()
    h.accept(session: 7)
    try! h.join(room)
    h.deliver(.channelAck(session: 7, sequence: 1))
    h.events(session: 7, first: 1, [(.joined, room, H.otherUser)])
    h.deliver(.sessionUnknown)
    h.accept(resumed: false, session: 8)
    return h
  }

  @Test func memberEvents_fromTheOldServerSession_deliveredLate_areSetAside() {
    var h = Self.afterANewServerSession()
    let carol = try! UserID(validating: Array("carol".utf8))
    let mark = h.mark
    // Late: the old session's event 1 again (a duplicate of bob's join).
    h.events(session: 7, first: 1, [(.joined, Self.room, H.otherUser)])
    // The new session's real event 1: carol joined.
    h.events(session: 8, first: 1, [(.joined, Self.room, carol)])
    let room = Self.room.bytes[...]
    #expect(
      h.mainNotifications(since: mark) == [.memberJoined(channel: room, userID: carol.bytes[...])])
    #expect(h.session.counters.staleSession == 1)
  }

  @Test func channelAck_fromTheOldServerSession_deliveredLate_doesNotAcknowledgeTheRejoin() {
    var h = Self.afterANewServerSession()
    #expect(h.session.pendingChannelOperations == 1)  // the rejoin of lobby, numbered 1
    h.deliver(.channelAck(session: 7, sequence: 1))
    #expect(h.session.pendingChannelOperations == 1)
    h.deliver(.channelAck(session: 8, sequence: 1))
    #expect(h.session.pendingChannelOperations == 0)
  }

  @Test func anAcceptOfAnotherServerSession_marked_resumed_stillRejoins() {
    // A server that says RESUMED under another session number is not the one that held
    // the channels: the client joins them again.
    var h = H()
    try! h.login()
    h.accept(session: 1)
    try! h.join(Self.room)
    h.deliver(.channelAck(session: 1, sequence: 1))
    h.run(for: .seconds(10))
    let mark = h.mark
    h.accept(resumed: true, session: 2)
    #expect(
      h.sentMessages(since: mark)
        == [
          .channelOperation(
            ChannelOperation(session: 2, sequence: 1, kind: .join, channel: Self.room))
        ])
  }
}
