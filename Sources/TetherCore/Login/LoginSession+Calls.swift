// SPDX-License-Identifier: Apache-2.0
// MARK: - The app's calls (docs/BEHAVIOUR.md §2)

extension LoginSession {
  /// Starts logging in as `userID`: CONNECTING/LOGIN, and a LOGIN goes out at once. The
  /// outcome comes once, as ``LoginNotification/loginResult(_:)``.
  ///
  /// `token` and `userID` are nil when the caller's strings did not validate: checked in
  /// this order, so every code is reachable.
  /// - Throws: ``TetherError/tooOften`` (-210) for a third call within one second (not
  ///   counted); ``TetherError/invalidArgument`` for a nil token or user id;
  ///   ``TetherError/alreadyLoggedIn`` (-208) unless DISCONNECTED. Nothing changes then.
  ///   (The login results of ``LoginError`` are what ``LoginNotification/loginResult(_:)``
  ///   reports, never thrown: one error space for every call of both profiles.)
  public mutating func login(
    token: Token?, userID: UserID?, now: Instant, into output: inout LoginOutput
  ) throws(TetherError) {
    let now = link.tick(now)
    if let older = recentCalls.0, now.since(older) < .seconds(1) { throw .tooOften }
    recentCalls = (recentCalls.1, now)
    guard let token, let userID else { throw .invalidArgument }
    guard case .disconnected = state else { throw .alreadyLoggedIn }
    link.open(cookie: random.next(), token: token, now: now)
    account = Account(userID: userID)
    channels.removeAll()
    transition(.login, into: &output)
    startAttempts(since: now, now: now, into: &output)
    advance(to: now, into: &output)
  }

  /// Logs out at once, from any state but DISCONNECTED: a LOGIN result still owed is
  /// reported UNKNOWN, then DISCONNECTED/LOGOUT and the logout result. A LOGOUT goes to
  /// the server unless the session was ABORTED (the server already ended it).
  /// - Throws: ``TetherError/notLoggedIn`` (-302) when DISCONNECTED; nothing changes then.
  public mutating func logout(now: Instant, into output: inout LoginOutput) throws(TetherError) {
    _ = link.tick(now)
    guard account != nil else { throw .notLoggedIn }
    if state != .aborted {
      // Twice, back to back: nothing answers a LOGOUT, and one lost datagram would leave
      // the others waiting for the server's online grace to end.
      let logout = Packet(cookie: link.cookie, message: .logout)
      output.send(logout)
      output.send(logout)
    }
    reportLoginResult(.unknown, into: &output)
    end(.logout, into: &output)
    output.notify(.logoutResult(.ok))
  }

  /// Joins `channel`: kept by the session (and joined again on every new server session)
  /// and sent to the server at once if CONNECTED, else when it is.
  /// - Throws: ``TetherError/notReady`` unless CONNECTING, CONNECTED or RECONNECTING, or
  ///   with 32 operations still unacknowledged; ``TetherError/joinChannelRejected`` when
  ///   already in `channel` or in 16 channels.
  public mutating func joinChannel(
    _ channel: ChannelName, now: Instant, into output: inout LoginOutput
  ) throws(TetherError) {
    try changeChannel(.join, channel, now: now, into: &output)
  }

  /// Leaves `channel`; the others in it get member-left.
  /// - Throws: ``TetherError/notReady`` unless CONNECTING, CONNECTED or RECONNECTING, when
  ///   not in `channel`, or with 32 operations still unacknowledged.
  public mutating func leaveChannel(
    _ channel: ChannelName, now: Instant, into output: inout LoginOutput
  ) throws(TetherError) {
    try changeChannel(.leave, channel, now: now, into: &output)
  }

  @inline(never)  // joinChannel and leaveChannel share one copy
  private mutating func changeChannel(
    _ kind: ChannelOperation.Kind, _ channel: ChannelName, now: Instant,
    into output: inout LoginOutput
  ) throws(TetherError) {
    let now = link.tick(now)
    guard isLoggingInOrIn, !channels.isBacklogged else { throw .notReady }
    switch kind {
    case .join:
      guard !channels.contains(channel), !channels.isFull else { throw .joinChannelRejected }
    case .leave:
      guard channels.contains(channel) else { throw .notReady }
    }
    var packet = channels.apply(kind, channel)
    if isConnected {
      packet.cookie = link.cookie
      output.send(packet)
    }
    advance(to: now, into: &output)
  }

  /// Hands the session a new token. CONNECTED: sent to the server at once (and with each
  /// heartbeat until answered); a refusal restores the old token and reports
  /// token-expired. CONNECTING, RECONNECTING: the next LOGIN carries it, and the expiry of
  /// the one it replaces is no longer reported; if a LOGIN of the effort went out with the
  /// old token, a RENEW_TOKEN follows the accept (as the channel's, ``LinkCore``).
  /// - Throws: ``TetherError/notReady`` when DISCONNECTED or ABORTED.
  public mutating func renewToken(_ token: Token, now: Instant, into output: inout LoginOutput)
    throws(TetherError)
  {
    let now = link.tick(now)
    guard isLoggingInOrIn else { throw .notReady }
    let connected = isConnected
    link.renew(with: token, connected ? .sentToServer : .forNextAttemptExpiryUnknown)
    if connected {
      output.sendRenewal(cookie: link.cookie, token: token)
    }
    advance(to: now, into: &output)
  }

  /// The device's addresses, or the server's address, changed. CONNECTED: a RELOGIN at once
  /// (token-bearing, so the server moves the session to the new address), no state
  /// change. CONNECTING, RECONNECTING: a LOGIN at once, backoff started over. Otherwise
  /// nothing.
  @inline(never)  // the driver reaches it through three hooks; one copy for all
  public mutating func networkChanged(now: Instant, into output: inout LoginOutput) {
    let now = link.tick(now)
    switch state {
    case .connected: sendLogin(into: &output)
    case .connecting, .reconnecting: retryNow(now: now, into: &output)
    case .disconnected, .aborted: break
    }
    advance(to: now, into: &output)
  }

  /// CONNECTING, CONNECTED or RECONNECTING: the link is busy.
  var isLoggingInOrIn: Bool {
    if case .idle = link.phase { false } else { true }
  }

  var isConnected: Bool { link.isLive }
}
