// SPDX-License-Identifier: Apache-2.0
// MARK: - The app's calls (docs/BEHAVIOUR.md §1.6)

extension ChannelSession {
  /// Starts joining `channel` as `uid` (0: the server assigns one): CONNECTING/CONNECTING,
  /// and a JOIN goes out at once.
  /// - Throws: ``TetherError/joinChannelRejected`` (-17) unless DISCONNECTED; nothing
  ///   changes then. Names and tokens are validated by their types before this call.
  public mutating func join(
    token: Token, channel: ChannelName, uid: UInt32, now: Instant, into output: inout ChannelOutput
  ) throws(TetherError) {
    let now = link.tick(now)
    guard state == .disconnected else { throw .joinChannelRejected }
    link.open(cookie: random.next(), token: token, now: now)
    membership = Membership(channel: channel, uid: uid, joinedAt: now)
    lastHeard = now
    transition(.connecting, into: &output)
    startAttempts(outageSince: now, now: now, into: &output)
    advance(to: now, into: &output)
  }

  /// Leaves at once, from any state: DISCONNECTED/LEAVE_CHANNEL then leave-channel, and
  /// nothing after. A LEAVE goes to the server unless the session had FAILED. Idempotent:
  /// when already DISCONNECTED it does nothing.
  public mutating func leave(now: Instant, into output: inout ChannelOutput) {
    _ = link.tick(now)
    guard membership != nil else { return }
    if state != .failed {
      // Twice, back to back: nothing answers a LEAVE and nothing is sent after it, so one
      // lost datagram would turn the others' QUIT into DROPPED, 20 s later. The server
      // takes the first that arrives and ignores the other (its cookie is no longer held).
      let leave = Packet(cookie: link.cookie, message: .leave)
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
  ///   the new token may still be good, so the rejoin goes on with it). If a JOIN of the
  ///   effort went out with the old token, the accept may be that JOIN's: the new token then
  ///   goes to the server in a RENEW_TOKEN too, as when CONNECTED (``LinkCore/accepted(tokenTimeLeftMs:now:)``).
  /// - FAILED after TOKEN_EXPIRED: RECONNECTING/RENEW_TOKEN and a rejoin at once; the
  ///   give-up clock starts again from now.
  /// - Throws: ``TetherError/notReady`` (-3) when DISCONNECTED, or FAILED for another
  ///   reason than TOKEN_EXPIRED (a new token cannot help there: leave, then join).
  public mutating func renewToken(_ token: Token, now: Instant, into output: inout ChannelOutput)
    throws(TetherError)
  {
    let now = link.tick(now)
    guard membership != nil else { throw .notReady }
    switch state {
    case .connected:
      link.renew(with: token, .sentToServer)
      output.sendRenewal(cookie: link.cookie, token: token)
    case .connecting, .reconnecting:
      link.renew(with: token, .forNextAttempt)
    case .failed where reason == .tokenExpired:
      link.renew(with: token, .afresh)
      link.replacedExpiredToken = true
      transition(.renewToken, into: &output)
      startAttempts(outageSince: now, now: now, into: &output)
    case .disconnected, .failed:
      throw .notReady
    }
    advance(to: now, into: &output)
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
    let now = link.tick(now)
    if case .attempting = link.phase { retryNow(now: now, into: &output) }
    advance(to: now, into: &output)
  }

  private mutating func reconnect(
    _ reason: ConnectionChangedReason, now: Instant, into output: inout ChannelOutput
  ) {
    let now = link.tick(now)
    switch state {
    case .connected, .reconnecting:
      transition(reason, into: &output)
      retryNow(now: now, into: &output)
    case .connecting:
      retryNow(now: now, into: &output)
    case .disconnected, .failed:
      break
    }
    advance(to: now, into: &output)
  }
}
