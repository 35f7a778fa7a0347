// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// A LOGIN_ACCEPT (not RESUMED) that the network duplicated, its copy arriving after the
/// session took member events: the copy answers a LOGIN the session already had the answer
/// to, from the same server session. Taken as a new server session, it numbered member
/// events from 1 again while the server went on from where it was: every later event was
/// set aside as out of order, for as long as the session lasted.
///
/// Fixed by the server-session number in LOGIN_ACCEPT: only another session's number
/// starts the numbering again (found by the login simulator, seed 136612).
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
    #expect(
      h.mainNotifications(since: mark) == [
        .memberLeft(channel: Self.room.bytes[...], userID: H.otherUser.bytes[...])
      ])
  }

  /// After a RELOGIN sent while CONNECTED (the network changed), an accept of another
  /// server session (a server that lost the session) is a new one, counted from 1.
  @Test func afterARelogin_aNewServerSession_isStillTaken() {
    var h = Self.connectedWithOneEvent()
    h.networkChanged()
    h.accept(resumed: false, session: 1)
    #expect(h.session.pendingChannelOperations == 1)  // the room, joined again
    let mark = h.mark
    h.events(session: 1, first: 1, [(.joined, Self.room, H.otherUser)])
    #expect(
      h.mainNotifications(since: mark) == [
        .memberJoined(channel: Self.room.bytes[...], userID: H.otherUser.bytes[...])
      ])
  }
}
