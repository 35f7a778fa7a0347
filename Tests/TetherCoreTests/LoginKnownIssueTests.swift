import Testing
import TetherSim

@testable import TetherCore

/// What the property tests' model server cannot do without failing: reorder a batch
/// across a server-session boundary. MEMBER_EVENTS and CHANNEL_ACK are numbered per server
/// session but carry nothing that says which session: one sent before the server lost the
/// session and delivered late, after the accept of the new one, is taken as the new
/// session's. Fixing it needs the wire to say the session (docs/PROTOCOL.md, the edge),
/// not the core alone; until then these are known issues, and each test fails the day the
/// behaviour is fixed so that it is turned into a plain test.
@Suite struct LoginKnownIssueTests {
  typealias H = LoginHarness
  static let room = Fixture.channel

  /// Connected, in `lobby` (acknowledged), bob's join (event 1) delivered; then the server
  /// loses the session and a new one accepts the relogin.
  static func afterANewServerSession() -> H {
    var h = H.connected()
    try! h.join(room)
    h.deliver(.channelAck(sequence: 1))
    h.events(first: 1, [(.joined, room, H.otherUser)])
    h.deliver(.sessionUnknown)
    h.accept(resumed: false)
    return h
  }

  @Test func memberEvents_fromTheOldServerSession_deliveredLate_areTakenAsNew() {
    var h = Self.afterANewServerSession()
    let carol = try! UserID(validating: Array("carol".utf8))
    let mark = h.mark
    // Late: the old session's event 1 again (a duplicate bob already saw).
    h.events(first: 1, [(.joined, Self.room, H.otherUser)])
    // The new session's real event 1: carol joined.
    h.events(first: 1, [(.joined, Self.room, carol)])
    let room = Self.room.bytes[...]
    withKnownIssue("a stale batch takes the new session's number 1: carol's join is dropped") {
      #expect(
        h.mainNotifications(since: mark) == [.memberJoined(channel: room, userID: carol.bytes[...])]
      )
    }
  }

  @Test func channelAck_fromTheOldServerSession_deliveredLate_dropsTheRejoin() {
    var h = Self.afterANewServerSession()
    #expect(h.session.pendingChannelOperations == 1)  // the rejoin of lobby, numbered 1
    // The old session's acknowledgement of its operation 1, late.
    h.deliver(.channelAck(sequence: 1))
    withKnownIssue("the rejoin is taken as acknowledged and never sent again") {
      #expect(h.session.pendingChannelOperations == 1)
    }
  }
}
