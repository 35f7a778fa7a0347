// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

// MARK: - The login profile's client in the world

/// A real ``LoginSession`` in the world: every entry point runs through
/// ``LoginInvariants`` and is recorded as a ``Step`` for the scenario's own checks.
public struct LoginClient: SimClient {
  public var session: LoginSession<SeededRandom>
  public var invariants = LoginInvariants()
  /// What it did, in order, since the scenario's checks last took it.
  public var steps: [Step] = []
  private var output = LoginOutput()
  /// Protocol version 2's layer, which the world gives it as it adds it
  /// (``SimClient/speak(_:)``); the steps and the invariants still see what the session
  /// wrote (``RecordedSession``). Until then the client sends nothing and takes nothing.
  public var secure: SecureLink<SimCrypto>?
  /// The session's last LOGIN and RENEW_TOKEN: what its INITs, CONFIRMs and sealed renewals
  /// stand for (``WireView``).
  private var lastAttempt: Packet?
  private var lastRenewal: Message?

  /// One call into the session: the state before, what it was, and what it produced.
  public struct Step {
    public var at: Instant
    public var before: LoginState
    public var step: LoginInvariants.Step
    public var notifications: [LoginNotification]
    public var sent: [Packet]
    public var violations: [String]
    /// For a datagram: the server session it was sent in.
    public var generation: UInt64?
  }

  public init(config: LoginConfig, seed: UInt64) {
    session = try! LoginSession(config: config, random: SeededRandom(seed: seed))
  }

  public var state: LoginState { session.state }
  public var nextDeadline: Instant? { session.nextDeadline }

  public mutating func advance(to now: Instant) -> [Sent] {
    run(at: now) { s, now, out in
      s.advance(to: now, into: &out)
      return .advance
    }
  }

  public mutating func speak(_ link: SecureLink<SimCrypto>) { secure = link }
  public private(set) var lastHanded: Packet?
  public private(set) var sessionWrites = 0

  public mutating func receive(
    _ bytes: [UInt8], _ packet: Packet?, generation: UInt64, now: Instant
  ) -> [Sent] {
    guard secure != nil else { return [] }
    let before = session.state
    output.removeAll()
    let (wrote, handed) = SecureDriver.receive(
      bytes[...], &session, link: &secure!, now: now, output: &output)
    // Over version 2 the step is what the layer handed the session (a refusal it made of a
    // sealed one, nothing for a copy or a replay it refused); it is always of the session's
    // own cookie.
    lastHanded = handed.map { Packet(cookie: invariants.cookie ?? 0, message: $0) }
    return record(before: before, .datagram(handed), wrote, generation: generation, now: now)
  }

  /// Runs one entry point at `now` (`body` says which it was), checks it against
  /// ``LoginInvariants``, records it, and returns what it sent.
  mutating func run(
    at now: Instant, generation: UInt64? = nil,
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) -> LoginInvariants.Step
  ) -> [Sent] {
    let before = session.state
    output.removeAll()
    guard secure != nil else { return [] }
    let (step, wrote) = SecureDriver.call(
      &session, link: &secure!, now: now, output: &output, body)
    return record(before: before, step, wrote, generation: generation, now: now)
  }

  /// Checks one step (what the session wrote in it) against ``LoginInvariants``, records
  /// it, and returns what went on the wire.
  private mutating func record(
    before: LoginState, _ step: LoginInvariants.Step, _ wrote: [SessionWrote<LoginNotification>],
    generation: UInt64?, now: Instant
  ) -> [Sent] {
    let violations = invariants.check(session, before: before, step: step, wrote: wrote, now: now)
    sessionWrites += wrote.count
    var packets: [Packet] = []
    var notifications: [LoginNotification] = []
    for item in wrote {
      switch item {
      case .notified(let n): notifications.append(n)
      case .sent(let packet):
        packets.append(packet)
        if case .login = packet.message { lastAttempt = packet }
        if case .renewToken = packet.message { lastRenewal = packet.message }
      case .undecodable: break  // the invariants said so
      }
    }
    var sent: [Sent] = []
    if let oracle = secure?.crypto.oracle {
      let (attempt, renewal) = (lastAttempt, lastRenewal)
      sent = output.datagrams.map { datagram -> Sent in
        let bytes = Array(datagram)
        return (
          bytes,
          WireView.packet(of: bytes, attempt: attempt, renewal: { renewal }, oracle: oracle)
        )
      }
      oracle.clearJournal()
    }
    steps.append(
      Step(
        at: now, before: before, step: step, notifications: notifications, sent: packets,
        violations: violations, generation: generation))
    return sent
  }
}

extension World where Client == LoginClient {
  /// A login token for `user` expiring `seconds` after the current wall clock.
  public func token(for user: UserID, expiresIn seconds: UInt64) -> Token {
    token(.user(user), expiresAt: wallClock + seconds)
  }

  public mutating func login(_ i: Int, token: Token, user: UserID) -> TetherError? {
    enter(i, LoginInvariants.Step.login(started:)) { s, now, out throws(TetherError) in
      try s.login(token: token, userID: user, now: now, into: &out)
    }
  }

  public mutating func logout(_ i: Int) -> TetherError? {
    enter(i, LoginInvariants.Step.logout(succeeded:)) { s, now, out throws(TetherError) in
      try s.logout(now: now, into: &out)
    }
  }

  /// join_channel, leave_channel, renew_token or network changed.
  public mutating func call(
    _ i: Int,
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) throws(TetherError) ->
      Void
  ) -> TetherError? {
    enter(i, { _ in .call }, body)
  }

  /// Runs `body` on client `i` now, as the entry point `step` says (from whether it
  /// succeeded), then sends what it sent; returns its error.
  private mutating func enter<E: Error>(
    _ i: Int, _ step: (Bool) -> LoginInvariants.Step,
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) throws(E) -> Void
  ) -> E? {
    var failure: E?
    perform(i) { client, now in
      client.run(at: now) { s, now, out in
        do throws(E) { try body(&s, now, &out) } catch { failure = error }
        return step(failure == nil)
      }
    }
    return failure
  }
}

// MARK: - The login profile's scenarios

extension LoginProfile {
  /// The app's calls a login scenario plans.
  public enum Call: Sendable, CustomStringConvertible {
    /// The client logs in as its user; the token expires after `expiresIn` wall seconds.
    case login(client: Int, expiresIn: UInt64)
    case logout(client: Int)
    case join(client: Int, channel: Int)
    case leave(client: Int, channel: Int)
    /// renew_token with a fresh one-hour token.
    case renew(client: Int)
    case networkChanged(client: Int)
    /// The operator kicks the user through the admin entry point, banning it for `ban` s.
    case kickUser(user: Int, ban: UInt32)

    public var description: String {
      func name(_ c: Int) -> String { String(decoding: channels[c].bytes, as: UTF8.self) }
      switch self {
      case .login(let c, let e): return "client \(c) logs in (token for \(e) s)"
      case .logout(let c): return "client \(c) logs out"
      case .join(let c, let ch): return "client \(c) joins \(name(ch))"
      case .leave(let c, let ch): return "client \(c) leaves \(name(ch))"
      case .renew(let c): return "client \(c) renews its token"
      case .networkChanged(let c): return "client \(c): network changed"
      case .kickUser(let u, let ban):
        return "admin kicks \(String(decoding: users[u].bytes, as: UTF8.self))"
          + (ban > 0 ? " and bans it for \(ban) s" : "")
      }
    }
  }

  public static let users = ["alice", "bob", "carol"].map {
    try! UserID(validating: Array($0.utf8))
  }
  public static let channels = ["lobby", "room2"].map {
    try! ChannelName(validating: Array($0.utf8))
  }
  public static var noun: String { "login scenario" }

  /// Two to four clients logging in as one of three user ids (so some share one:
  /// takeovers, RELOGINs kicked), joining and leaving two channels; thresholds heartbeat
  /// 100 ms, interrupted 400 ms, login timeout 1 s, retry cap 800 ms; cuts shorter and
  /// longer than the edge's grace, kicks and bans, token renewals and expiries.
  public static var plan: PlanShape {
    PlanShape(
      salt: 0x1061_5CE7_A210_0000, appSalt: 0x10A99, duration: 7000, start: 800, events: 8,
      moreEvents: 12,
      mix: PlanShape.weighted([
        .cut: 6, .faults: 3, .other(0): 2, .other(1): 2, .other(2): 2, .other(3): 2, .other(4): 1,
        .restartServer: 1, .other(5): 1, .other(6): 1, .other(7): 3,
      ]),
      faults: [.loss, .duplicate, .duplicateFar, .jitter, .spike])
  }

  public static func config(_ r: inout SeededRandom) -> LoginConfig {
    var config = LoginConfig(appID: Fixture.appID)
    config.heartbeatInterval = .milliseconds(100)
    config.interruptedAfter = .milliseconds(400)
    config.loginTimeout = .milliseconds(1000)
    config.retry = RetryPolicy(base: .milliseconds(50), cap: .milliseconds(800))
    return config
  }

  /// Each client's user id.
  public static func roles(_ count: Int, _ r: inout SeededRandom) -> [Int] {
    (0..<count).map { _ in Int(r.next() % 3) }
  }

  public static func opening(_ i: Int, _ r: inout SeededRandom) -> [(
    at: Instant, action: ScenarioAction<Call>
  )] {
    let at = r.next() % 800
    var plan: [(at: Instant, action: ScenarioAction<Call>)] = [
      (.ms(at), .call(.login(client: i, expiresIn: r.next() % 6 == 0 ? 3 + r.next() % 6 : 3600)))
    ]
    for channel in 0..<2 where r.next() % 3 != 0 {
      plan.append((.ms(at + r.next() % 400), .call(.join(client: i, channel: channel))))
    }
    return plan
  }

  /// Around the client's thresholds and the edge's grace (3 s).
  public static func thresholds(_ config: LoginConfig) -> [UInt64] { [100, 400, 1000, 3000, 3000] }

  public static func event(_ kind: Int, client: Int, _ r: inout SeededRandom) -> ScenarioAction<
    Call
  > {
    switch kind {
    case 0: .call(.join(client: client, channel: Int(r.next() % 2)))
    case 1: .call(.leave(client: client, channel: Int(r.next() % 2)))
    case 2: .call(.login(client: client, expiresIn: r.next() % 5 == 0 ? 4 : 3600))
    case 3: .call(.logout(client: client))
    case 4: .call(.renew(client: client))
    case 5: .call(.networkChanged(client: client))
    case 6:
      .call(
        .kickUser(user: Int(r.next() % 3), ban: r.next() % 2 == 0 ? 0 : 1 + UInt32(r.next() % 3)))
    default:
      // A cut past the grace.
      .cut(client: client, .both, length: .milliseconds(3000 + r.next() % 1500))
    }
  }

  public static func name(of i: Int, in scenario: Scenario<LoginProfile>) -> String {
    "user " + String(decoding: scenario.user(of: i).bytes, as: UTF8.self)
  }
}

extension Scenario where P == LoginProfile {
  /// The user id client `i` logs in as.
  public func user(of i: Int) -> UserID { LoginProfile.users[role[i]] }
}
