// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The login session's invariants (docs/BEHAVIOUR.md §2, docs/STATES.md "Login session states"),
/// checked after every entry point by the property tests and by fuzz-login: the caller
/// says what the step was and hands over its output; the answer is the list of what was
/// violated (empty when all holds).
///
/// - every state change carries a pair whose reason goes with its state, and no two
///   consecutive ones carry the same pair; the session's state is the last one reported;
/// - `on_login_result` exactly once per `login` that returned 0 (never for a refused one),
///   reported while still CONNECTING, before the change that leaves it;
/// - `on_logout_result` only from a `logout` that returned 0, after DISCONNECTED/LOGOUT;
/// - a refused call, and any step while DISCONNECTED or ABORTED but `login`/`logout`,
///   produces nothing; after `logout`, nothing until the next `login`;
/// - nothing is sent while DISCONNECTED or ABORTED, nor scheduled: `nextDeadline` is nil
///   exactly then; otherwise it is after `now` and, while CONNECTING or RECONNECTING, no
///   further than the retry cap (attempts never stop);
/// - every datagram sent decodes, fits 1200 bytes, is a login-profile client message and
///   carries the login's cookie (set by its first LOGIN);
/// - RECONNECTING is left only by `logout`, an accept, a ban or remote login (KICK or
///   LOGIN_REFUSE 7) or the server's TOKEN_EXPIRED, never by time alone;
/// - member events are reported only for a MEMBER_EVENTS received while CONNECTED, at most
///   as many as it carries.
public struct LoginInvariants {
  public enum Step {
    case login(started: Bool)
    case logout(succeeded: Bool)
    /// join_channel, leave_channel, renew_token, network changed.
    case call
    case advance
    /// A datagram: its message if it decoded with this login's cookie, else nil.
    case datagram(Message?)
  }

  private var lastPair: (LoginState, LoginChangeReason)?
  private var resultOwed = false
  private var loggedOut = false
  /// The login's cookie, from its first LOGIN; nil before it.
  public private(set) var cookie: UInt64?
  /// How many of each the checks saw (so a test can show it exercised them).
  public private(set) var loginResults = 0
  public private(set) var memberEvents = 0

  public init() {}

  public mutating func check<R: RandomNumberGenerator>(
    _ session: LoginSession<R>, before: LoginState, step: Step, output: LoginOutput,
    now: Instant
  ) -> [String] {
    check(
      session, before: before, step: step,
      wrote: RecordedSession<LoginSession<R>>.written(output, from: 0), now: now)
  }

  /// As above, from what the session wrote (before protocol version 2's layer rewrote its
  /// datagrams: ``RecordedSession``).
  public mutating func check<R: RandomNumberGenerator>(
    _ session: LoginSession<R>, before: LoginState, step: Step,
    wrote: [SessionWrote<LoginNotification>], now: Instant
  ) -> [String] {
    var violations: [String] = []
    func require(_ condition: Bool, _ message: @autoclosure () -> String) {
      if !condition { violations.append(message()) }
    }
    let quiet = wrote.isEmpty
    let notifications = wrote.compactMap { if case .notified(let n) = $0 { n } else { nil } }
    switch step {
    case .login(started: true):
      require(!resultOwed, "a login started while the previous result was owed")
      resultOwed = true
      loggedOut = false
      cookie = nil
    case .login(started: false), .logout(succeeded: false):
      require(quiet, "a refused call produced \(wrote.count) actions")
    case .logout(succeeded: true):
      break
    case .call, .advance, .datagram:
      require(!loggedOut || quiet, "actions after logout: \(notifications)")
      require(
        !(before == .disconnected || before == .aborted) || quiet,
        "actions while \(before.name): \(notifications)")
    }

    var current = before
    var logoutResults = 0
    for action in wrote {
      switch action {
      case .notified(.connectionStateChanged(let state, let reason)):
        require(reason.state == state, "\(state.name) reported with \(reason.name)")
        require(
          lastPair.map { $0 != (state, reason) } ?? true, "\(state.name)/\(reason.name) twice")
        if current == .connecting && state != .connecting {
          require(!resultOwed, "left CONNECTING for \(state.name) before on_login_result")
        }
        if current == .reconnecting && state != .reconnecting {
          require(
            Self.mayEndReconnecting(step), "left RECONNECTING for \(state.name) on \(step)")
        }
        lastPair = (state, reason)
        current = state
      case .notified(.loginResult(let result)):
        loginResults += 1
        require(resultOwed, "on_login_result(\(result.name)) not owed")
        require(current == .connecting, "on_login_result while \(current.name)")
        resultOwed = false
      case .notified(.logoutResult(let result)):
        logoutResults += 1
        require(result == .ok, "on_logout_result(\(result.name))")
        guard case .logout(succeeded: true) = step else {
          violations.append("on_logout_result outside a logout")
          continue
        }
        require(
          current == .disconnected && lastPair?.1 == .logout,
          "on_logout_result before DISCONNECTED/LOGOUT")
      case .notified(.memberJoined), .notified(.memberLeft):
        memberEvents += 1
        guard case .datagram(.memberEvents) = step else {
          violations.append("a member event outside MEMBER_EVENTS (\(step))")
          continue
        }
        require(current == .connected, "a member event while \(current.name)")
      case .notified(.tokenExpired), .notified(.loginAttempt):
        break
      case .undecodable(let bytes):
        require(bytes.count <= Packet.maximumSize, "sent \(bytes.count) bytes")
        violations.append("sent a datagram that does not decode: \(bytes)")
      case .sent(let packet):
        let size = packet.encoded.count
        require(size <= Packet.maximumSize, "sent \(size) bytes")
        require(
          current != .disconnected && current != .aborted, "sent while \(current.name)")
        switch packet.message {
        case .login, .loginHeartbeat, .logout, .channelOperation, .renewToken: break
        default: violations.append("sent \(packet.message)")
        }
        if cookie == nil, case .login = packet.message { cookie = packet.cookie }
        require(packet.cookie == cookie && packet.cookie != 0, "sent under cookie \(packet.cookie)")
      }
    }
    if case .logout(succeeded: true) = step {
      require(logoutResults == 1, "logout reported its result \(logoutResults) times")
      require(!resultOwed, "logout left the login result owed")
      loggedOut = true
    }
    if case .datagram(.memberEvents(let batch)) = step {
      // Only member events count: a deadline due at the same instant fires in the same call.
      let taken = notifications.filter {
        switch $0 {
        case .memberJoined, .memberLeft: true
        default: false
        }
      }
      require(taken.count <= batch.count, "more member events than sent")
    }

    require(session.state == current, "state \(session.state.name), last reported \(current.name)")
    require(session.reason == lastPair?.1, "reason \(String(describing: session.reason))")
    require(!resultOwed || session.state == .connecting, "result owed in \(session.state.name)")
    switch session.state {
    case .disconnected, .aborted:
      require(session.nextDeadline == nil, "\(session.state.name) with a deadline")
      require(session.nextDeadlineWindow == nil, "\(session.state.name) with a window")
    case .connecting, .connected, .reconnecting:
      guard let due = session.nextDeadline else {
        violations.append("\(session.state.name) with no deadline")
        break
      }
      require(due > now, "\(session.state.name): deadline \(due) not after now \(now)")
      if session.state != .connected {
        require(
          due <= now + session.config.retry.cap,
          "\(session.state.name): next deadline \(due) beyond the retry cap from \(now)")
      }
    }
    return violations
  }

  static func mayEndReconnecting(_ step: Step) -> Bool {
    switch step {
    case .logout(succeeded: true): true
    case .datagram(.loginAccept), .datagram(.kick(.banned)), .datagram(.kick(.remoteLogin)),
      .datagram(.loginRefuse(code: 7)), .datagram(.tokenExpired):
      true
    default: false
    }
  }
}
