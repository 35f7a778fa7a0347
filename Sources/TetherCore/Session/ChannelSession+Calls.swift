// MARK: - The app's calls (docs/BEHAVIOUR.md §1.6)

extension ChannelSession {
  /// Starts joining `channel` as `uid` (0: the server assigns one): CONNECTING/CONNECTING,
  /// and a JOIN goes out at once.
  /// - Throws: ``TetherError/joinChannelRejected`` (-17) unless DISCONNECTED; nothing
  ///   changes then. Names and tokens are validated by their types before this call.
  public mutating func join(
    token: Token, channel: ChannelName, uid: UInt32, now: Instant, into output: inout ChannelOutput
  ) throws(TetherError) {
    let now = tick(now)
    guard state == .disconnected else { throw .joinChannelRejected }
    var cookie = random.next()
    if cookie == 0 { cookie = 1 }
    membership = Membership(channel: channel, token: token, uid: uid, cookie: cookie, joinedAt: now)
    lastData = now
    lastHeard = now
    transition(.connecting, into: &output)
    startAttempts(outageSince: now, now: now, into: &output)
    runDue(now, into: &output)
  }

  /// Leaves at once, from any state: DISCONNECTED/LEAVE_CHANNEL then leave-channel, and
  /// nothing after. A LEAVE goes to the server unless the session had FAILED. Idempotent:
  /// when already DISCONNECTED it does nothing.
  public mutating func leave(now: Instant, into output: inout ChannelOutput) {
    _ = tick(now)
    guard let membership else { return }
    if state != .failed {
      // Twice, back to back: nothing answers a LEAVE and nothing is sent after it, so one
      // lost datagram would turn the others' QUIT into DROPPED, 20 s later. The server
      // takes the first that arrives and ignores the other (its cookie is no longer held).
      let leave = Packet(cookie: membership.cookie, message: .leave)
      output.send(leave)
      output.send(leave)
    }
    end(.leaveChannel, into: &output)
    output.notify(.leaveChannel)
  }

  /// Hands the session a new token.
  /// - CONNECTED: sent to the server at once (and with each heartbeat until answered);
  ///   no state change. Until the answer, the new token's expiry is unknown and no expiry
  ///   deadline runs; a refusal restores the old token and its expiry and asks for
  ///   another token (request-token).
  /// - CONNECTING, RECONNECTING: used by the next JOIN; its expiry comes with the accept.
  ///   Until then the expiry already known keeps running: if it passes first, request-token
  ///   and no state change (docs/BEHAVIOUR.md §3: an expiry during a reconnect is always reported;
  ///   the new token may still be good, so the rejoin goes on with it).
  /// - FAILED after TOKEN_EXPIRED: RECONNECTING/RENEW_TOKEN and a rejoin at once; the
  ///   give-up clock starts again from now.
  /// - Throws: ``TetherError/notReady`` (-3) when DISCONNECTED, or FAILED for another
  ///   reason than TOKEN_EXPIRED (a new token cannot help there: leave, then join).
  public mutating func renewToken(_ token: Token, now: Instant, into output: inout ChannelOutput)
    throws(TetherError)
  {
    let now = tick(now)
    // The membership is changed in place (a copy of it costs the Embedded library a copy
    // and a destroy of every field at each use).
    guard let cookie = membership?.cookie else { throw .notReady }
    switch state {
    case .connected:
      membership?.startRenewal(with: token)
      output.send(Packet(cookie: cookie, message: .renewToken(token)))
    case .connecting, .reconnecting:
      membership?.replaceToken(with: token)
    case .failed where reason == .tokenExpired:
      membership?.adopt(token)
      membership?.renewal = nil
      transition(.renewToken, into: &output)
      startAttempts(outageSince: now, now: now, into: &output)
    case .disconnected, .failed:
      throw .notReady
    }
    runDue(now, into: &output)
  }

  /// The device's addresses changed (`byUser`: the app said so; otherwise the driver saw
  /// it). CONNECTED or RECONNECTING: RECONNECTING/CLIENT_IP_ADDRESS_CHANGED(_BY_USER) and
  /// a rejoin at once, backoff started over. CONNECTING: a JOIN at once, no state
  /// change (the session was never connected). DISCONNECTED, FAILED: nothing.
  public mutating func networkChanged(byUser: Bool, now: Instant, into output: inout ChannelOutput)
  {
    let reason: ConnectionChangedReason =
      byUser ? .clientIPAddressChangedByUser : .clientIPAddressChanged
    reconnect(reason, now: now, into: &output)
  }

  /// The driver switched to another server or proxy endpoint. As ``networkChanged(byUser:now:into:)``,
  /// with SETTING_PROXY_SERVER.
  public mutating func endpointChanged(now: Instant, into output: inout ChannelOutput) {
    reconnect(.settingProxyServer, now: now, into: &output)
  }

  /// The server's address became known, or changed, without the app asking (the driver
  /// looked its name up again): while CONNECTING or RECONNECTING a JOIN goes out at once,
  /// backoff started over, with no state change (the effort goes on, only its target
  /// moved). Otherwise nothing: a live session keeps its server until it stops answering.
  public mutating func endpointResolved(now: Instant, into output: inout ChannelOutput) {
    let now = tick(now)
    guard case .attempting = link else { return }
    retryNow(now: now, into: &output)
    runDue(now, into: &output)
  }

  private mutating func reconnect(
    _ reason: ConnectionChangedReason, now: Instant, into output: inout ChannelOutput
  ) {
    let now = tick(now)
    switch state {
    case .connected, .reconnecting:
      transition(reason, into: &output)
      retryNow(now: now, into: &output)
    case .connecting:
      retryNow(now: now, into: &output)
    case .disconnected, .failed:
      return
    }
    runDue(now, into: &output)
  }
}

extension Membership {
  /// Takes `token` as the current one; its expiry is unknown until the server says.
  mutating func adopt(_ token: Token) {
    self.token = token
    tokenExpiresAt = nil
    tokenWarned = false
    tokenUnconfirmed = false
  }

  /// CONNECTED: `token` is sent to the server; until it answers, what to go back to if it
  /// refuses is kept (the token before the first renewal not answered yet).
  mutating func startRenewal(with token: Token) {
    if renewal == nil {
      renewal = PendingRenewal(
        previousToken: self.token, previousExpiresAt: tokenExpiresAt, previousWarned: tokenWarned)
    }
    adopt(token)
  }

  /// CONNECTING or RECONNECTING: the next JOIN carries `token`; the expiry already known
  /// keeps running until a server accepts it.
  mutating func replaceToken(with token: Token) {
    self.token = token
    renewal = nil
    tokenUnconfirmed = true
    tokenWarned = true  // the app has acted on the old token's warning
  }
}
