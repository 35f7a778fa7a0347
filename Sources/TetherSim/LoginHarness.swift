// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// One login session on a virtual clock (see ``SessionHarness``).
public typealias LoginHarness = SessionHarness<LoginSession<SeededRandom>>

extension LoginSession: HarnessedSession where Random == SeededRandom {
  public static var harnessConfig: LoginConfig { LoginConfig(appID: Fixture.appID) }
  public static func isAttempt(_ message: Message) -> Bool {
    if case .login = message { true } else { false }
  }
  public static func isAttemptReport(_ notification: LoginNotification) -> Bool {
    if case .loginAttempt = notification { true } else { false }
  }
  public static func heartbeatSequence(_ message: Message) -> UInt32? {
    if case .loginHeartbeat(let sequence, _, _) = message { sequence } else { nil }
  }
}

extension SessionHarness where Session == LoginSession<SeededRandom> {
  public static var user: UserID { try! UserID(validating: Array("alice".utf8)) }
  public static var otherUser: UserID { try! UserID(validating: Array("bob".utf8)) }
  public static var config: LoginConfig { Session.harnessConfig }

  // MARK: - Calls

  public mutating func login(token: Token? = Fixture.token, userID: UserID? = LoginHarness.user)
    throws(TetherError)
  {
    try step { s, now, out throws(TetherError) in
      try s.login(token: token, userID: userID, now: now, into: &out)
    }
  }

  public mutating func logout() throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.logout(now: now, into: &out) }
  }

  public mutating func join(_ channel: ChannelName = Fixture.channel) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.joinChannel(channel, now: now, into: &out) }
  }

  public mutating func leave(_ channel: ChannelName = Fixture.channel) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.leaveChannel(channel, now: now, into: &out)
    }
  }

  public mutating func networkChanged() {
    step { s, now, out in s.networkChanged(now: now, into: &out) }
  }

  // MARK: - The server's side

  public mutating func accept(
    resumed: Bool = false, tokenTimeLeftMs: UInt32 = 0, session: UInt32 = 0
  ) {
    deliver(
      .loginAccept(
        LoginAccept(
          serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: resumed, session: session)))
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

  // MARK: - Looking at the logs

  /// LOGINs sent since `mark`, with their times.
  public func logins(since mark: Mark? = nil) -> [(at: Instant, request: LoginRequest)] {
    sent[(mark?.sent ?? 0)...].compactMap {
      if case .login(let r) = $0.packet.message { ($0.at, r) } else { nil }
    }
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
