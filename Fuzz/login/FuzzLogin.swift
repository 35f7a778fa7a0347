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
enum LoginOperation: UInt8, CaseIterable, FuzzOperation {
  case rawDatagram, ownCookieDatagram, message, memberEvents, advance, runToDeadline
  case lateWakeUp, login, logout, join, leave, renew, networkChanged
}

struct LoginDriver: SessionFuzzer {
  var subject: SessionUnderTest<LoginSession<SeededRandom>>
  var now = Instant(nanoseconds: 1_000_000_000)
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

  init(session: LoginSession<SeededRandom>) { subject = SessionUnderTest(session: session) }

  mutating func start(flags: UInt8) { login(token: Samples.token, userID: Samples.user) }

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
      step({ .end(succeeded: $0) }) { s, now, out in
        do throws(TetherError) {
          try s.logout(now: now, into: &out)
          return true
        } catch {
          return false
        }
      }
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

  // MARK: - The server's messages

  /// LOGIN_ACCEPT, LOGIN_REFUSE and CHANNEL_ACK are the login's own, and an ACCEPT.
  static let messageKinds: UInt8 = 9

  static func accept(tokenTimeLeftMs: UInt32) -> Message {
    .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: false))
  }

  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
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
    step({ .start(succeeded: $0) }) { s, now, out in
      do throws(TetherError) {
        try s.login(token: token, userID: userID, now: now, into: &out)
        return true
      } catch {
        return false
      }
    }
  }

  mutating func check(before: LoginState, _ step: FuzzStep) {
    let violations = invariants.check(
      session, before: before, step: invariantStep(step), output: output, now: now)
    require(violations.isEmpty, "\(violations)")
    cookie = invariants.cookie ?? 0
  }

  /// `step` as LoginInvariants names it: a datagram counts as the login's only when it
  /// decoded and carries the login's cookie.
  func invariantStep(_ step: FuzzStep) -> LoginInvariants.Step {
    switch step {
    case .datagram(let packet):
      .datagram(packet.flatMap { $0.cookie == cookie && cookie != 0 ? $0.message : nil })
    case .advance: .advance
    case .start(let started): .login(started: started)
    case .end(let succeeded): .logout(succeeded: succeeded)
    case .call: .call
    }
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeLogin(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(LoginSeeds.all)
  return 0
}
