// SPDX-License-Identifier: Apache-2.0
import TetherCore

// fuzz-login: a LoginSession (sans-IO, virtual time) logged in (and accepted, unless the
// input says not), then driven by the input: datagrams (raw, with the login's cookie
// patched in, or built from fields, MEMBER_EVENTS included), clock advances that fire
// every deadline at its instant, late wake-ups that jump several, and the app's calls
// (login, logout, join, leave, renew, network changed); the config too. After every
// entry point, LoginInvariants (Sources/TetherSim/LoginInvariants.swift, shared with
// LoginPropertyTests) must hold:
// - nothing traps;
// - every state change carries a (state, reason) pair whose reason goes with its state, no
//   two consecutive ones the same pair; the state is the last one reported;
// - on_login_result once per login that returned 0, before the change that leaves
//   CONNECTING; on_logout_result only after DISCONNECTED/LOGOUT;
// - nothing at all from a refused call, while DISCONNECTED or ABORTED, or after logout
//   until the next login; no deadline then either;
// - nextDeadline after `now`, and within the retry cap while (re)connecting;
// - every datagram sent decodes, fits 1200 bytes, is a login-profile client message and
//   carries the login's cookie;
// - RECONNECTING left only by logout, an accept, a ban, a remote login or TOKEN_EXPIRED;
// - a datagram that decodes re-encodes to the same bytes; receive and decode agree.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogin(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  LoginDriver.fuzz(start, count)
}

/// What the fuzzer's input does next.
enum LoginOperation: UInt8, CaseIterable {
  case rawDatagram, ownCookieDatagram, message, memberEvents, advance, runToDeadline
  case lateWakeUp, login, logout, join, leave, renew, networkChanged
}

struct LoginDriver: SessionFuzzer {
  var session: LoginSession<SeededRandom>
  var now = Instant(nanoseconds: 1_000_000_000)
  var output = LoginOutput()
  var invariants = LoginInvariants()
  /// The cookie of the current login (from its LOGINs), 0 before the first.
  var cookie: UInt64 = 0
  /// Lower than fuzz-session's: each firing's checks decode what it sent (a LOGIN may
  /// carry a 512-byte token), and an input that reaches the cap is still one of the slowest.
  var firingsLeft = 10_000

  static let channels = ["lobby", "room-1", "room-2", "x"].map {
    try! ChannelName(validating: Array($0.utf8))
  }
  static let longToken = try! Token(validating: Array(repeating: UInt8(ascii: "t"), count: 512))
  static let longUser = try! UserID(validating: Array(repeating: UInt8(ascii: "u"), count: 64))

  /// Reads a config and the opening (login, then a LOGIN_ACCEPT unless the input says
  /// not), or nil for a config the session refuses.
  init?(_ input: inout FuzzInput) {
    var config = LoginConfig(appID: Samples.appID)
    let flags = input.u8()
    if flags & 1 == 1 {
      config.loginTimeout = .milliseconds(UInt64(input.u16()))
      config.interruptedAfter = .milliseconds(UInt64(input.u16()))
      config.heartbeatInterval = .milliseconds(UInt64(input.u16()))
      config.retry = RetryPolicy(
        base: .milliseconds(UInt64(input.u16())), cap: .milliseconds(UInt64(input.u16())))
    }
    guard let session = try? LoginSession(config: config, random: SeededRandom(seed: input.u64()))
    else { return nil }
    self.session = session
    login(token: Samples.token, userID: Samples.user)
    if flags & 4 == 0 {
      let timeLeft: UInt32 = flags & 8 == 0 ? 0 : 45_000
      deliver(.loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: timeLeft, resumed: false)))
    }
  }

  mutating func perform(_ input: inout FuzzInput) {
    switch input.pick(LoginOperation.allCases) {
    case .rawDatagram: deliverRaw(&input)
    case .ownCookieDatagram: deliverOwnCookie(&input)
    case .message: deliver(Self.serverMessage(&input))
    case .memberEvents:
      var entries: [MemberEvent.Entry] = []
      for _ in 0..<Int(1 + input.u8() % 8) {
        entries.append(
          MemberEvent.Entry(
            kind: input.pick(MemberEvent.Kind.allCases), channel: input.pick(Self.channels),
            userID: input.bool() ? Samples.otherUser : Samples.user))
      }
      let first = input.pick([0, 1, 2, 3, 5, UInt32.max], orAny: true)
      deliver(.memberEvents(try! MemberEvents(firstSequence: first, entries: entries)))
    case .advance: wait(&input)
    case .runToDeadline: runToDeadline()
    case .lateWakeUp:
      now = now + .milliseconds(input.milliseconds())
      advance()
    case .login:
      let choice = input.u8()
      let token: Token? = choice & 3 == 3 ? nil : (choice & 4 == 0 ? Samples.token : Self.longToken)
      let user: UserID? =
        choice & 24 == 24 ? nil : (choice & 32 == 0 ? Samples.user : Self.longUser)
      login(token: token, userID: user)
    case .logout:
      let before = session.state
      output.removeAll()
      let succeeded: Bool
      do throws(TetherError) {
        try session.logout(now: now, into: &output)
        succeeded = true
      } catch {
        succeeded = false
      }
      check(before: before, .logout(succeeded: succeeded))
    case .join:
      let channel = input.pick(Self.channels)
      call { s, now, out in _ = try? s.joinChannel(channel, now: now, into: &out) }
    case .leave:
      let channel = input.pick(Self.channels)
      call { s, now, out in _ = try? s.leaveChannel(channel, now: now, into: &out) }
    case .renew:
      let token = input.bool() ? Samples.token2 : Self.longToken
      call { s, now, out in _ = try? s.renewToken(token, now: now, into: &out) }
    case .networkChanged:
      call { s, now, out in s.networkChanged(now: now, into: &out) }
    }
  }

  /// A server → client message of one of 9 kinds: LOGIN_ACCEPT, LOGIN_REFUSE, CHANNEL_ACK
  /// are the login's, and an ACCEPT (see ``Samples/serverMessage(_:kinds:own:)``).
  static func serverMessage(_ input: inout FuzzInput) -> Message {
    Samples.serverMessage(&input, kinds: 9, own: loginMessage)
  }

  static func loginMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
    switch selector {
    case 0:
      return .loginAccept(
        LoginAccept(
          serverTimeMs: input.u64(),
          tokenTimeLeftMs: input.pick([0, 1, 4_000, 45_000], orAny: true),
          resumed: input.bool()))
    case 1: return .loginRefuse(code: input.u8())
    case 3: return .channelAck(sequence: input.pick([0, 1, 2, 5, UInt32.max], orAny: true))
    default:
      // A channel-profile packet: a login session has no use for it.
      return .accept(
        JoinAccept(uid: input.u32(), serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false))
    }
  }

  mutating func login(token: Token?, userID: UserID?) {
    let before = session.state
    output.removeAll()
    let started: Bool
    do throws(TetherError) {
      try session.login(token: token, userID: userID, now: now, into: &output)
      started = true
    } catch {
      started = false
    }
    check(before: before, .login(started: started))
  }

  mutating func call(_ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) -> Void)
  {
    let before = session.state
    output.removeAll()
    body(&session, now, &output)
    check(before: before, .call)
  }

  mutating func receive(_ bytes: [UInt8], decoded: Packet?) -> WireError? {
    let before = session.state
    output.removeAll()
    let error = session.receive(datagram: bytes[...], now: now, into: &output)
    let own = decoded.flatMap { $0.cookie == cookie && cookie != 0 ? $0.message : nil }
    check(before: before, .datagram(own))
    return error
  }

  mutating func advance() {
    let before = session.state
    output.removeAll()
    session.advance(to: now, into: &output)
    check(before: before, .advance)
  }

  mutating func check(before: LoginState, _ step: LoginInvariants.Step) {
    let violations = invariants.check(
      session, before: before, step: step, output: output, now: now)
    require(violations.isEmpty, "\(violations)")
    cookie = invariants.cookie ?? 0
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeLogin(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(LoginSeeds.all)
  return 0
}
