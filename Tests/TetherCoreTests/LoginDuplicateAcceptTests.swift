import Testing
import TetherSim

@testable import TetherCore

/// A LOGIN_ACCEPT (not RESUMED) that the network duplicated, its copy arriving after the
/// session took member events: the copy answers a LOGIN the session already had the answer
/// to, from the same server session. Taken as a new server session, it numbered member
/// events from 1 again while the server went on from where it was: every later event was
/// set aside as out of order, for as long as the session lasted.
///
/// A known issue, not fixed here: ignoring a non-RESUMED accept while CONNECTED with no
/// LOGIN sent since the last accept fixes it, but the property tests' model server delivers
/// such accepts unprompted and takes them as new sessions, and the session epoch being
/// added to LOGIN_ACCEPT lets the session tell a copy apart. The test fails the day it is
/// fixed, to be turned into a plain test then.
@Suite struct LoginDuplicateAcceptTests {
  typealias H = LoginHarness
  static let room = Fixture.channel

  /// CONNECTED, in the room (acknowledged), bob's join taken as event 1.
  static func connectedWithOneEvent() -> H {
    var h = H.connected()
    try! h.join(room)
    h.deliver(.channelAck(sequence: 1))
    h.events(first: 1, [(.joined, room, H.otherUser)])
    return h
  }

  @Test func aLateCopyOfTheFirstAccept_keepsTheEventCount() {
    var h = Self.connectedWithOneEvent()
    h.accept(resumed: false)
    let mark = h.mark
    h.events(first: 2, [(.left, Self.room, H.otherUser)])
    withKnownIssue("the copy restarts the event count: bob's leave is set aside") {
      #expect(
        h.mainNotifications(since: mark) == [
          .memberLeft(channel: Self.room.bytes[...], userID: H.otherUser.bytes[...])
        ])
    }
  }

  /// After a RELOGIN sent while CONNECTED (the network changed), an accept that is not
  /// RESUMED is the answer of a server that lost the session: a new one, counted from 1.
  @Test func afterARelogin_aNewServerSession_isStillTaken() {
    var h = Self.connectedWithOneEvent()
    h.networkChanged()
    h.accept(resumed: false)
    #expect(h.session.pendingChannelOperations == 1)  // the room, joined again
    let mark = h.mark
    h.events(first: 1, [(.joined, Self.room, H.otherUser)])
    #expect(
      h.mainNotifications(since: mark) == [
        .memberJoined(channel: Self.room.bytes[...], userID: H.otherUser.bytes[...])
      ])
  }
}
