// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@_spi(Link) @testable import TetherCore

/// The deadline scan both profiles' sessions share, against the plain definitions it was
/// made smaller from: one pass over the deadlines for both the next deadline and the
/// wake-up window.
@Suite struct DeadlineScanTests {
  /// The window as the merge of every applicable deadline's own window (only the heartbeat
  /// and a join attempt have slack: 1/16 of the heartbeat interval, 1/8 of the retry base).
  static func mergedWindow(_ link: LinkCore, own: Instant?) -> DeadlineWindow? {
    var window: DeadlineWindow?
    for kind in LinkDeadline.allCases {
      guard let at = link.dueTime(of: kind, own: own) else { continue }
      let slack: Interval =
        switch kind {
        case .heartbeat: Interval(nanoseconds: link.timing.heartbeatInterval.nanoseconds / 16)
        case .retry: Interval(nanoseconds: link.timing.retry.base.nanoseconds / 8)
        default: .zero
        }
      let own = DeadlineWindow(start: at, slack: slack)
      window = window.map { $0.merged(with: own) } ?? own
    }
    return window
  }

  /// The earliest deadline, the earlier case winning a tie.
  static func firstDue(_ link: LinkCore, own: Instant?) -> (LinkDeadline, Instant)? {
    var best: (LinkDeadline, Instant)?
    for kind in LinkDeadline.allCases {
      if let at = link.dueTime(of: kind, own: own), best.map({ at < $0.1 }) ?? true {
        best = (kind, at)
      }
    }
    return best
  }

  /// The scan of `link` agrees with both definitions, and the session's answers with it.
  static func check(
    _ link: LinkCore, own: Instant?, window: DeadlineWindow?, next: Instant?, _ label: String
  ) {
    #expect(window == mergedWindow(link, own: own), "\(label)")
    let scanned = link.earliestDue(own: own)
    let expected = firstDue(link, own: own)
    #expect(scanned?.kind == expected?.0 && scanned?.at == expected?.1, "\(label)")
    #expect(next == expected?.1, "\(label)")
  }

  /// Also the window the driver reads where the session is held (``windowInPlace()``).
  static func check(_ h: LoginHarness, _ label: String) {
    var s = h.session
    check(s.link, own: nil, window: s.nextDeadlineWindow, next: s.nextDeadline, label)
    #expect(s.windowInPlace() == mergedWindow(s.link, own: nil), "\(label), in place")
  }

  static func check(_ h: Harness, _ label: String) {
    var s = h.session
    check(s.link, own: s.ownDue, window: s.nextDeadlineWindow, next: s.nextDeadline, label)
    #expect(s.windowInPlace() == mergedWindow(s.link, own: s.ownDue), "\(label), in place")
  }

  @Test func theStoredCaseList_isAllCasesInOrder() {
    #expect(LinkDeadline.all == LinkDeadline.allCases)
  }

  /// Every starting state of both transition tables, then each of them run on in virtual
  /// time in small steps (retries, heartbeats, interruptions, timeouts fall due).
  @Test func oneScan_matchesEveryDeadlineMerged_inEveryLoginState() {
    for (name, make) in LoginStatesTableTests.fixtures {
      var h = make()
      Self.check(h, name)
      for step in 1...40 {
        h.run(for: .ms(173))
        Self.check(h, "\(name) + \(step * 173) ms")
      }
    }
  }

  @Test func oneScan_matchesEveryDeadlineMerged_inEveryChannelState() {
    for (name, make) in StatesTableTests.fixtures {
      var h = make()
      h.deliver(
        .presence(try! PresenceDigest([PresenceEntry(uid: 7, kind: .joined, silentForMs: 0)])))
      Self.check(h, name)
      for step in 1...200 {
        h.run(for: .ms(173))
        Self.check(h, "\(name) + \(step * 173) ms")
      }
    }
  }

  /// CONNECTED: the window opens at the heartbeat and closes 1/16 of its interval later.
  /// RECONNECTING: at the next attempt, closing 1/8 of the retry base (500 ms) later, since
  /// nothing exact falls due before (the token has an hour left).
  @Test func window_whileConnected_endsAtTheHeartbeatsSlack() {
    var h = LoginHarness.connected(tokenTimeLeftMs: 3_600_000)
    let window = h.session.nextDeadlineWindow
    #expect(window?.start == h.now + .seconds(1))
    #expect(window?.end == h.now + .seconds(1) + Interval(nanoseconds: 62_500_000))
    h.run(for: .seconds(5))
    #expect(h.state == .reconnecting)
    let reconnecting = h.session.nextDeadlineWindow
    #expect(reconnecting?.start == h.session.nextDeadline)
    #expect(reconnecting.map { $0.end == $0.start + Interval(nanoseconds: 62_500_000) } == true)
  }
}

/// The channels of a login session: acknowledgements drop a prefix of `pending`, and a new
/// server session numbers from 1 again.
@Suite struct LoginChannelsTests {
  @Test func acknowledge_dropsTheOperationsUpToTheSequence_keepingTheRestInOrder() throws {
    var channels = LoginChannels()
    let names = try ["a", "b", "c", "d"].map { try ChannelName(validating: Array($0.utf8)) }
    for name in names { _ = channels.apply(.join, name) }
    _ = channels.apply(.leave, names[1])
    #expect(channels.pending.map(\.sequence) == [1, 2, 3, 4, 5])
    channels.acknowledge(upTo: 0)
    #expect(channels.pending.map(\.sequence) == [1, 2, 3, 4, 5])
    channels.acknowledge(upTo: 2)
    #expect(channels.pending.map(\.sequence) == [3, 4, 5])
    #expect(channels.pending.map(\.kind) == [.join, .join, .leave])
    channels.acknowledge(upTo: 2)
    #expect(channels.pending.map(\.sequence) == [3, 4, 5])
    channels.acknowledge(upTo: 9)
    #expect(channels.pending.isEmpty)
    #expect(channels.joined == [names[0], names[2], names[3]])
  }

  @Test func restart_numbersFromOneAgain_andJoinsEveryChannelInOrder() throws {
    var channels = LoginChannels()
    let names = try ["a", "b", "c"].map { try ChannelName(validating: Array($0.utf8)) }
    for name in names { _ = channels.apply(.join, name) }
    _ = channels.apply(.leave, names[0])
    channels.acknowledge(upTo: 1)
    channels.eventsReceived = 7
    channels.restart(serverSession: 42)
    #expect(channels.serverSession == 42 && channels.eventsReceived == 0)
    #expect(channels.pending.map(\.sequence) == [1, 2])
    #expect(channels.pending.map(\.channel) == [names[1], names[2]])
    #expect(channels.pending.allSatisfy { $0.kind == .join })
    #expect(LoginChannels.operation(in: channels.apply(.join, names[0])).sequence == 3)
  }
}
