// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The driver looked the server's name up (again) and found an address: a JOIN at once
/// while (re)joining, with no state change; nothing otherwise.
@Suite struct EndpointResolvedTests {
  private func resolved(_ h: inout Harness) {
    h.step { s, now, out in s.endpointResolved(now: now, into: &out) }
  }

  @Test func connecting_sendsAJoinAtOnce_withoutAStateChange() throws {
    var h = Harness()
    try h.join()
    h.run(for: .ms(300))
    let mark = h.mark
    resolved(&h)
    #expect(h.joins(since: mark).count == 1)
    #expect(h.mainNotifications(since: mark).isEmpty)
    #expect(h.state == .connecting)
    #expect(h.session.retryStatus?.attempt == 1)
  }

  @Test func reconnecting_sendsAJoinAtOnce_keepingItsReason() {
    var h = Harness.connected()
    h.run(for: .seconds(5))
    #expect(h.state == .reconnecting)
    let reason = h.reason
    let mark = h.mark
    resolved(&h)
    #expect(h.joins(since: mark).count == 1)
    #expect(h.mainNotifications(since: mark).isEmpty)
    #expect(h.state == .reconnecting)
    #expect(h.reason == reason)
  }

  @Test func connectedDisconnectedAndFailed_doNothing() {
    var live = Harness.connected()
    var mark = live.mark
    resolved(&live)
    #expect(live.sentMessages(since: mark).isEmpty)
    #expect(live.mainNotifications(since: mark).isEmpty)

    var idle = Harness()
    mark = idle.mark
    resolved(&idle)
    #expect(idle.sentMessages(since: mark).isEmpty)
    #expect(idle.log.isEmpty)

    var failed = Harness.connected()
    failed.deliver(.kick(.banned))
    #expect(failed.state == .failed)
    mark = failed.mark
    resolved(&failed)
    #expect(failed.sentMessages(since: mark).isEmpty)
    #expect(failed.mainNotifications(since: mark).isEmpty)
  }
}
