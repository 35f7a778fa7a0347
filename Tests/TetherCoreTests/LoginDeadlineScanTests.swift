import Testing
import TetherSim

@testable import TetherCore

/// The login session's deadline scan and its channel bookkeeping, against the plain
/// definitions they were made smaller from: one pass over the deadlines for both the next
/// deadline and the wake-up window, and acknowledgements that drop a prefix of `pending`.
@Suite struct LoginDeadlineScanTests {
  typealias H = LoginHarness

  /// The window as the merge of every applicable deadline's own window (only the heartbeat
  /// has slack, 1/16 of its interval).
  static func mergedWindow(_ s: LoginSession<SeededRandom>) -> DeadlineWindow? {
    var window: DeadlineWindow?
    for kind in LoginDeadline.allCases {
      guard let at = s.dueTime(of: kind) else { continue }
      let slack =
        kind == .heartbeat
        ? Interval(nanoseconds: s.config.heartbeatInterval.nanoseconds / 16) : .zero
      let own = DeadlineWindow(start: at, slack: slack)
      window = window.map { $0.merged(with: own) } ?? own
    }
    return window
  }

  /// The earliest deadline, the earlier case winning a tie.
  static func firstDue(_ s: LoginSession<SeededRandom>) -> (LoginDeadline, Instant)? {
    var best: (LoginDeadline, Instant)?
    for kind in LoginDeadline.allCases {
      if let at = s.dueTime(of: kind), best.map({ at < $0.1 }) ?? true { best = (kind, at) }
    }
    return best
  }

  static func check(_ h: H, _ label: String) {
    #expect(h.session.nextDeadlineWindow == mergedWindow(h.session), "\(label)")
    let scanned = h.session.earliestDue()
    let expected = firstDue(h.session)
    #expect(scanned?.kind == expected?.0 && scanned?.at == expected?.1, "\(label)")
    #expect(h.session.nextDeadline == expected?.1, "\(label)")
  }

  @Test func theStoredCaseList_isAllCasesInOrder() {
    #expect(LoginDeadline.all == LoginDeadline.allCases)
  }

  /// Every starting state of the transition table, then each of them run on in virtual
  /// time in small steps (retries, heartbeats, interruptions, timeouts fall due).
  @Test func oneScan_matchesEveryDeadlineMerged_inEveryState() {
    for (name, make) in LoginStatesTableTests.fixtures {
      var h = make()
      Self.check(h, name)
      for step in 1...40 {
        h.run(for: .ms(173))
        Self.check(h, "\(name) + \(step * 173) ms")
      }
    }
  }

  /// CONNECTED: the window opens at the heartbeat and closes 1/16 of its interval later.
  /// RECONNECTING: no slack at all.
  @Test func window_whileConnected_endsAtTheHeartbeatsSlack() {
    var h = H.connected(tokenTimeLeftMs: 3_600_000)
    let window = h.session.nextDeadlineWindow
    #expect(window?.start == h.now + .seconds(1))
    #expect(window?.end == h.now + .seconds(1) + Interval(nanoseconds: 62_500_000))
    h.run(for: .seconds(5))
    #expect(h.state == .reconnecting)
    let reconnecting = h.session.nextDeadlineWindow
    #expect(reconnecting != nil && reconnecting?.start == reconnecting?.end)
  }

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
    #expect(channels.apply(.join, names[0]).sequence == 3)
  }
}
