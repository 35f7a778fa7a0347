import TetherCore

/// One login session on a virtual clock, talking to a server the test plays by hand (the
/// login profile's ``Harness``). Every notification and sent packet is logged with its time.
public struct LoginHarness {
  public var session: LoginSession<SeededRandom>
  public var now: Instant = .zero
  public var log: [(at: Instant, notification: LoginNotification)] = []
  public var sent: [(at: Instant, packet: Packet)] = []
  /// Notifications and sent packets interleaved, in the order the session produced them.
  public var trace: [Traced] = []

  public enum Traced {
    case notified(LoginNotification)
    case sent(Packet)
  }
  private var output = LoginOutput()

  public static let user = try! UserID(validating: Array("alice".utf8))
  public static let otherUser = try! UserID(validating: Array("bob".utf8))
  public static var config: LoginConfig { LoginConfig(appID: Fixture.appID) }

  public init(config: LoginConfig = LoginHarness.config, seed: UInt64 = 1) {
    session = try! LoginSession(config: config, random: SeededRandom(seed: seed))
  }

  public var state: LoginState { session.state }
  public var reason: LoginChangeReason? { session.reason }
  /// The cookie of the current login (from the LOGINs it sent).
  public var cookie: UInt64 {
    sent.last { if case .login = $0.packet.message { true } else { false } }?.packet.cookie ?? 0
  }

  /// Runs `body` against the session at the current time and logs what it produced.
  public mutating func step<T, E: Error>(
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) throws(E) -> T
  ) throws(E) -> T {
    output.removeAll()
    defer { collect() }
    return try body(&session, now, &output)
  }

  private mutating func collect() {
    for action in output.actions {
      switch action {
      case .notify(let n):
        log.append((now, n))
        trace.append(.notified(n))
      case .send(let d):
        let packet = try! Packet.decode(output.bytes(of: d))
        sent.append((now, packet))
        trace.append(.sent(packet))
      }
    }
  }

  // MARK: - Calls

  public mutating func login(token: Token? = Fixture.token, userID: UserID? = LoginHarness.user)
    throws(LoginError)
  {
    try step { s, now, out throws(LoginError) in
      try s.login(token: token, userID: userID, now: now, into: &out)
    }
  }

  public mutating func logout() throws(LogoutError) {
    try step { s, now, out throws(LogoutError) in try s.logout(now: now, into: &out) }
  }

  public mutating func join(_ channel: ChannelName = Fixture.channel) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.joinChannel(channel, now: now, into: &out) }
  }

  public mutating func leave(_ channel: ChannelName = Fixture.channel) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.leaveChannel(channel, now: now, into: &out)
    }
  }

  public mutating func renew(_ token: Token = Fixture.token2) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  public mutating func networkChanged() {
    step { s, now, out in s.networkChanged(now: now, into: &out) }
  }

  // MARK: - The server's side

  /// The server sends `message` with this session's cookie (or `cookie`).
  public mutating func deliver(_ message: Message, cookie: UInt64? = nil) {
    let bytes = Packet(cookie: cookie ?? self.cookie, message: message).encoded
    step { s, now, out in _ = s.receive(datagram: bytes[...], now: now, into: &out) }
  }

  public mutating func accept(
    resumed: Bool = false, tokenTimeLeftMs: UInt32 = 0, session: UInt32 = 0
  ) {
    deliver(
      .loginAccept(
        LoginAccept(
          serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: resumed, session: session)))
  }

  /// The server answers every heartbeat sent since `mark` (as a live link would).
  public mutating func ackHeartbeats(since mark: Mark) {
    for message in sentMessages(since: mark) {
      if case .loginHeartbeat(let sequence, _) = message {
        deliver(.heartbeatAck(sequence: sequence, serverTimeMs: 0))
      }
    }
  }

  /// Member events of server session `session`, numbered from `first`.
  public mutating func events(
    session: UInt32 = 0, first: UInt32, _ entries: [(MemberEvent.Kind, ChannelName, UserID)]
  ) {
    let batch = try! MemberEvents(
      session: session, firstSequence: first,
      entries: entries.map { MemberEvent.Entry(kind: $0.0, channel: $0.1, userID: $0.2) })
    deliver(.memberEvents(batch))
  }

  // MARK: - Time

  /// Moves the clock to `time`, firing every deadline on the way at its exact instant.
  /// With `answering`, every heartbeat is acknowledged at once (a healthy link).
  public mutating func run(until time: Instant, answering: Bool = false) {
    var steps = 0
    while let due = session.nextDeadline, due <= time {
      steps += 1
      precondition(steps < 1_000_000, "the session keeps asking for the same deadline")
      precondition(due >= now, "deadline in the past")
      now = due
      let mark = self.mark
      step { s, now, out in s.advance(to: now, into: &out) }
      if answering { ackHeartbeats(since: mark) }
    }
    now = time
  }

  public mutating func run(for interval: Interval, answering: Bool = false) {
    run(until: now + interval, answering: answering)
  }

  // MARK: - Looking at the logs

  public struct Mark {
    public let log: Int
    public let sent: Int
    public let trace: Int
  }

  public var mark: Mark { Mark(log: log.count, sent: sent.count, trace: trace.count) }

  /// Everything but the login-attempt reports, which carry jittered times.
  public func mainNotifications(since mark: Mark? = nil) -> [LoginNotification] {
    log[(mark?.log ?? 0)...].map(\.notification).filter {
      if case .loginAttempt = $0 { false } else { true }
    }
  }

  public func sentMessages(since mark: Mark? = nil) -> [Message] {
    sent[(mark?.sent ?? 0)...].map(\.packet.message)
  }

  /// LOGINs sent since `mark`, with their times.
  public func logins(since mark: Mark? = nil) -> [(at: Instant, request: LoginRequest)] {
    sent[(mark?.sent ?? 0)...].compactMap {
      if case .login(let r) = $0.packet.message { ($0.at, r) } else { nil }
    }
  }

  /// When the first notification equal to `notification` was logged.
  public func time(of notification: LoginNotification) -> Instant? {
    log.first { $0.notification == notification }?.at
  }

  /// A CONNECTED session: logged in at `now`, accepted 100 ms later.
  public static func connected(
    tokenTimeLeftMs: UInt32 = 0, config: LoginConfig = LoginHarness.config, seed: UInt64 = 1
  ) -> LoginHarness {
    var h = LoginHarness(config: config, seed: seed)
    try! h.login()
    h.run(for: .ms(100))
    h.accept(tokenTimeLeftMs: tokenTimeLeftMs)
    return h
  }
}
