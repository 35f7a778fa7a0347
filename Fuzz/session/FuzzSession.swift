// SPDX-License-Identifier: Apache-2.0
import TetherCore

// fuzz-session: a ChannelSession (sans-IO, virtual time) joined and accepted, then driven
// by the input: datagrams (raw, with the session's cookie patched in, or built from fields),
// clock advances that fire every deadline at its instant, and the app's calls. Properties
// checked after every step:
// - nothing traps;
// - the (state, reason) pair is one docs/BEHAVIOUR.md allows, and every state change reported is;
//   two consecutive reports never carry the same pair;
// - a datagram that decodes re-encodes to the same bytes;
// - every datagram the session sends decodes, fits 1200 bytes, is a client type and carries
//   the session's cookie;
// - nextDeadline is after `now` when an entry point returns, nil exactly when DISCONNECTED
//   or FAILED;
// - after leave, the leave's two notifications and nothing else until the next join.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSession(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  SessionDriver.fuzz(start, count)
}

/// What the fuzzer's input does next.
enum Operation: UInt8, CaseIterable, FuzzOperation {
  case rawDatagram, ownCookieDatagram, message, advance, runToDeadline
  case leave, join, renew, networkChanged, endpointChanged
}

struct SessionDriver: SessionFuzzer {
  var subject: SessionUnderTest<ChannelSession<SeededRandom>>
  var now = Instant(nanoseconds: 1_000_000_000)
  /// The cookie of the current membership (from its JOINs), 0 before the first.
  var cookie: UInt64 = 0
  var lastStateChange: (ConnectionState, ConnectionChangedReason)?
  /// Left, and not joined since: nothing may be reported.
  var left = false
  var firingsLeft = 50_000

  init(session: ChannelSession<SeededRandom>) { subject = SessionUnderTest(session: session) }

  /// Flag 2: the join asks for uid 7 rather than one the server assigns.
  mutating func start(flags: UInt8) { join(uid: flags & 2 == 0 ? 0 : 7) }

  mutating func perform(_ input: inout FuzzInput) {
    switch input.pick(Operation.allCases) {
    case .rawDatagram: deliverRaw(&input)
    case .ownCookieDatagram: deliverOwnCookie(&input)
    case .message: deliver(Self.serverMessage(&input))
    case .advance: wait(&input)
    case .runToDeadline: runToDeadline()
    case .leave:
      leave()
    case .join:
      join(uid: input.pick([0, 7, 1001, UInt32.max]))
    case .renew:
      let token = input.bool() ? Samples.token2 : Samples.token
      call { s, now, out in _ = try? s.renewToken(token, now: now, into: &out) }
    case .networkChanged:
      let byUser = input.bool()
      call { s, now, out in s.networkChanged(byUser: byUser, now: now, into: &out) }
    case .endpointChanged:
      call { s, now, out in s.endpointChanged(now: now, into: &out) }
    }
  }

  // MARK: - The server's messages

  /// ACCEPT, REFUSE and PRESENCE are the channel's own.
  static let messageKinds: UInt8 = 8

  static func accept(tokenTimeLeftMs: UInt32) -> Message {
    .accept(
      JoinAccept(uid: 1001, serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: false))
  }

  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
    channelServerMessage(selector, &input)
  }

  mutating func join(uid: UInt32) {
    if session.state == .disconnected { left = false }
    step({ .start(succeeded: $0) }) { s, now, out in
      (try? s.join(
        token: Samples.token, channel: Samples.channel, uid: uid, now: now, into: &out)) != nil
    }
  }

  /// Leaves: the leave's two reports (none when already DISCONNECTED), then silence.
  mutating func leave() {
    let wasJoined = session.state != .disconnected
    left = false
    step({ _ in .end(succeeded: true) }) { s, now, out in s.leave(now: now, into: &out) }
    let expected: [ChannelNotification] =
      wasJoined ? [.connectionStateChanged(.disconnected, .leaveChannel), .leaveChannel] : []
    require(output.notifications == expected, "leave reported \(output.notifications)")
    left = true
  }

  /// The properties hold whatever the step was.
  mutating func check(before: ConnectionState, _ step: FuzzStep) {
    let state = session.state
    if let reason = session.reason {
      require(reason.state == state, "state \(state) with reason \(reason)")
    } else {
      require(state == .disconnected, "state \(state) with no reason")
    }
    switch state {
    case .disconnected, .failed:
      require(session.nextDeadline == nil, "\(state) with a deadline")
    case .connecting, .connected, .reconnecting:
      require(
        session.nextDeadline.map { $0 > now } ?? false || now.nanoseconds == .max,
        "\(state) with deadline \(String(describing: session.nextDeadline)) at \(now)")
    }
    let notifications = output.notifications
    for notification in notifications {
      guard case .connectionStateChanged(let s, let r) = notification else { continue }
      require(r.state == s, "reported \(s) with \(r)")
      require(lastStateChange.map { $0 != (s, r) } ?? true, "reported \(s)/\(r) twice")
      lastStateChange = (s, r)
    }
    if let last = lastStateChange {
      require(
        last.0 == state && last.1 == session.reason, "last report \(last) but state \(state)")
    }
    require(!left || notifications.isEmpty, "reports after leave: \(notifications)")
    for datagram in output.datagrams {
      require(datagram.count <= Packet.maximumSize, "sent \(datagram.count) bytes")
      guard let packet = try? Packet.decode(datagram) else {
        fatalError("property violated: sent a datagram that does not decode: \(Array(datagram))")
      }
      switch packet.message {
      case .join: cookie = packet.cookie
      case .heartbeat, .leave, .renewToken:
        require(packet.cookie == cookie, "sent under cookie \(packet.cookie), joined as \(cookie)")
      default: fatalError("property violated: the client sent \(packet.message)")
      }
    }
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeSession(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(SessionSeeds.all)
  return 0
}
