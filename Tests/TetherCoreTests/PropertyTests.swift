// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// Random event sequences (seeded, so a failure replays) checked against the invariants
/// docs/BEHAVIOUR.md implies: valid state/reason pairs, each change reported once, nothing after
/// leave, FAILED only through its reasons, retries stop at give-up, no deadline in the past.
@Suite struct PropertyTests {
  static let seeds: [UInt64] = Array(1...400)

  @Test(arguments: seeds)
  func randomEventSequences_keepEveryInvariant(seed: UInt64) throws {
    var random = SeededRandom(seed: seed)
    var config = Fixture.config
    // Short thresholds now and then, so deadlines collide with packets more often.
    if random.next() % 2 == 0 {
      config.interruptedAfter = .ms(400)
      config.lostAfter = .ms(1000)
      config.remoteOfflineAfter = .ms(2000)
      config.giveUpAfter = .ms(5000)
      config.tokenWillExpireBefore = .ms(300)
      config.heartbeatInterval = .ms(100)
      config.retry = RetryPolicy(base: .ms(50), cap: .ms(800))
    }
    var h = Harness(config: config, seed: seed)
    var checker = InvariantChecker()
    for step in 0..<150 {
      let mark = h.mark
      let event = Self.randomEvent(&random, h: h, config: config)
      switch event {
      case .call(let call): try? call(&h)
      case .wait(let interval): h.run(for: interval)
      case .lateWakeUp(let interval):
        h.now = h.now + interval
        h.step { s, now, out in s.advance(to: now, into: &out) }
      case .datagram(let bytes):
        h.step { s, now, out in _ = s.receive(datagram: bytes[...], now: now, into: &out) }
      }
      checker.check(h, since: mark, context: "seed \(seed) step \(step)")
    }
  }

  enum RandomEvent {
    case call((inout Harness) throws(TetherError) -> Void)
    case wait(Interval)
    case lateWakeUp(Interval)
    case datagram([UInt8])
  }

  static func randomEvent(_ r: inout SeededRandom, h: Harness, config: ChannelConfig) -> RandomEvent
  {
    let scale = config.heartbeatInterval.nanoseconds / 1_000_000  // 1000 or 100
    let pick = r.next()
    let a = r.next()
    switch pick % 20 {
    case 0, 1: return .call { h throws(TetherError) in try h.join(uid: UInt32(a % 3)) }
    case 2: return .call { h in h.leave() }
    case 3:
      return .call { h throws(TetherError) in
        try h.renew(a % 2 == 0 ? Fixture.token : Fixture.token2)
      }
    case 4: return .call { h in h.networkChanged(byUser: a % 2 == 0) }
    case 5: return .call { h in h.endpointChanged() }
    case 6, 7, 8: return .wait(.ms(a % (scale * 15)))
    case 9: return .wait(.ms(a % (scale * 1300)))
    case 10: return .lateWakeUp(.ms(a % (scale * 30)))
    case 11:
      var bytes = Packet(cookie: h.cookie, message: .heartbeat(sequence: 1)).encoded
      bytes[Int(a % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: r.next() | 1)
      return .datagram(bytes)
    default:
      let cookie = a % 8 == 0 ? r.next() : h.cookie
      return .datagram(
        Packet(cookie: cookie, message: randomServerMessage(&r, scale: scale)).encoded)
    }
  }

  static func randomServerMessage(_ r: inout SeededRandom, scale: UInt64) -> Message {
    let ttl: [UInt32] = [0, UInt32(scale) * 2, UInt32(scale) * 60, 7_200_000]
    switch r.next() % 12 {
    case 0, 1:
      return .accept(
        JoinAccept(
          uid: UInt32(r.next() % 5), serverTimeMs: 0, tokenTimeLeftMs: ttl[Int(r.next() % 4)],
          resumed: r.next() % 2 == 0))
    case 2: return .refuse(RefuseReason.allCases[Int(r.next() % 5)])
    case 3, 4, 5: return .heartbeatAck(sequence: 0, serverTimeMs: 0)
    case 6, 7:
      let entries = (0..<(r.next() % 5)).map { _ in
        PresenceEntry(
          uid: UInt32(r.next() % 8), kind: PresenceEntry.Kind.allCases[Int(r.next() % 3)],
          silentForMs: UInt32(r.next() % (scale * 25)))
      }
      return .presence(try! PresenceDigest(entries))
    case 8: return .kick(r.next() % 2 == 0 ? .banned : .sameUID)
    case 9: return r.next() % 2 == 0 ? .tokenExpired : .sessionUnknown
    case 10:
      return .tokenRenewed(
        TokenRenewal(
          refused: r.next() % 2 == 0 ? nil : .invalidToken, tokenTimeLeftMs: ttl[Int(r.next() % 4)])
      )
    default: return .heartbeat(sequence: 9)  // wrong direction: must be ignored
    }
  }
}

/// Follows a session's notifications and packets across steps and checks every rule.
struct InvariantChecker {
  var reported: (ConnectionState, ConnectionChangedReason)?
  var left = false
  var gaveUp = false

  static let failedReasons: [ConnectionChangedReason] = [
    .bannedByServer, .joinFailed, .invalidAppID, .invalidChannelName, .tokenExpired,
    .rejectedByServer, .sameUIDLogin,
  ]

  mutating func check(_ h: Harness, since mark: Harness.Mark, context: String) {
    var state = reported?.0 ?? .disconnected
    for item in h.trace[mark.trace...] {
      switch item {
      case .sent(let packet):
        if case .join = packet.message {
          // Retries stop at give-up, and nothing at all leaves an idle session.
          #expect(!gaveUp, "JOIN after give-up: \(context)")
          #expect(state == .connecting || state == .reconnecting, "JOIN in \(state): \(context)")
        }
        #expect(!left, "sent after leave: \(context)")
      case .notified(let n):
        if left {
          // After leave, only a new join may speak, and it starts with CONNECTING.
          #expect(n == .connectionStateChanged(.connecting, .connecting), "after leave: \(context)")
        }
        check(n, state: &state, context: context)
      }
    }
    #expect(h.state == (reported?.0 ?? .disconnected), "state drifted: \(context)")
    // The reported deadline is never in the past.
    if let next = h.session.nextDeadline {
      #expect(
        next > h.now, "deadline \(next.nanoseconds) not after \(h.now.nanoseconds): \(context)")
    }
  }

  private mutating func check(
    _ n: ChannelNotification, state: inout ConnectionState, context: String
  ) {
    switch n {
    case .connectionStateChanged(let s, let reason):
      #expect(reason.state == s, "pair \(s) \(reason): \(context)")
      #expect(reported.map { $0 != (s, reason) } ?? true, "reported twice: \(context)")
      if s == .failed {
        #expect(Self.failedReasons.contains(reason), "FAILED via \(reason): \(context)")
      }
      reported = (s, reason)
      state = s
      left = false
      gaveUp = reason == .joinFailed
    case .leaveChannel:
      #expect(
        reported.map { $0 == (.disconnected, .leaveChannel) } ?? false, "leave order: \(context)")
      left = true
    case .joinChannelSuccess, .rejoinChannelSuccess:
      #expect(state == .connected, "join callback outside CONNECTED: \(context)")
    case .userJoined, .userOffline, .remoteMemberInterrupted, .remoteMemberResumed:
      #expect(state == .connected, "member event outside CONNECTED: \(context)")
    case .connectionLost, .joinAttempt:
      #expect(state == .connecting || state == .reconnecting, "\(n) in \(state): \(context)")
    case .tokenPrivilegeWillExpire, .requestToken:
      #expect(state != .disconnected, "token event while DISCONNECTED: \(context)")
    }
  }
}
