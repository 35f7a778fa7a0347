// SPDX-License-Identifier: Apache-2.0
// MARK: - What the session sends

extension SecureLink {
  /// Rewrites, in place, the datagrams of `output` from action `first` on (what the
  /// session wrote in the entry point just called) into what version 2 sends:
  /// - a JOIN or LOGIN becomes the held CONFIRM again while its ticket lasts, else a new
  ///   INIT (with a resume when a session's keys are held). A text that is not a version 2
  ///   token sends nothing and the session gets the edge's invalid-token refusal (§12.4);
  /// - a RENEW_TOKEN carries the new token's `W`; a text that is not a version 2 token
  ///   sends nothing and the session gets a refused TOKEN_RENEWED;
  /// - anything else becomes DATA under `k_d2e`: the type byte and the version 1 body,
  ///   padded as §12.7 says. Without keys, or past the hard limits, nothing is sent.
  /// What the session answers a synthetic refusal with is rewritten too. Past the rekey
  /// limits, a resumed handshake starts here on its own, with no change to the session.
  @inline(never)
  public mutating func secure<Session: LinkSession>(
    _ output: inout SessionOutput<Session.Notification>, from first: Int,
    session: inout Session, now: Instant
  ) {
    var first = first
    // Ends: a synthetic answer (a refusal of a token) ends the join or the renewal, and
    // what the session writes for it (notifications; a LOGIN only at its next retry
    // instant) asks for no other answer, so one more pass follows it at most.
    while first < output.actions.count {
      let answer = rewrite(&output, from: first, now: now)
      first = output.actions.count
      // Fed after the rewrite: the session appends to the output it reads from.
      if let answer {
        session.receive(answer, now: now, into: &output, cookie: session.link.cookie)
      }
    }
    if boundCookie != 0, session.link.cookie == 0 {  // the session ended: nothing of it is kept
      forget()
      boundCookie = 0
    }
    rekeyIfDue(&output, now: now)
  }

  /// One pass over the actions from `first`: each send rewritten or removed. Returns the
  /// synthetic answer a datagram asked for (a refusal of a token), if any. The generic
  /// part is the walk over the actions alone (one copy per profile); the bytes are the
  /// non-generic functions' below (one copy for both).
  private mutating func rewrite<Notification>(
    _ output: inout SessionOutput<Notification>, from first: Int, now: Instant
  ) -> Message? {
    // The session's bytes of these actions go aside at its first datagram (they run to the
    // end); version 2's are written in their place. One pass: stashed at the first send.
    var base = -1
    var answer: Message?
    var index = first
    while index < output.actions.count {
      guard case .send(let datagram) = output.actions[index] else {
        index += 1
        continue
      }
      if base < 0 {
        base = datagram.range.lowerBound
        stash(&output.bytes, from: base)
      }
      if let range = rewrite(datagram.range, base: base, now: now, into: &output.bytes, &answer) {
        output.actions[index] = .send(Datagram(range: range))
        index += 1
      } else {
        output.actions.remove(at: index)
      }
    }
    return answer
  }

  /// Moves `bytes[base...]` (the session's datagrams) into ``scratch``.
  @inline(never)
  private mutating func stash(_ bytes: inout [UInt8], from base: Int) {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: bytes[base...])
    bytes.removeSubrange(base...)
  }

  /// The session's datagram at `range` (of the bytes stashed from `base`) rewritten onto
  /// the end of `bytes`: the new datagram's range, nil if nothing is sent.
  @inline(never)
  private mutating func rewrite(
    _ range: Range<Int>, base: Int, now: Instant, into bytes: inout [UInt8],
    _ answer: inout Message?
  ) -> Range<Int>? {
    let start = bytes.count
    let v1 = scratch[(range.lowerBound - base)..<(range.upperBound - base)]
    if let refusal = translate(v1, now: now, into: &bytes) { answer = refusal }
    return bytes.count > start ? start..<bytes.count : nil
  }

  /// Appends version 2's datagram for the session's version 1 datagram `v1` (nothing if
  /// none); returns the synthetic answer the session must get instead, if any.
  private mutating func translate(
    _ v1: ArraySlice<UInt8>, now: Instant, into out: inout [UInt8]
  ) -> Message? {
    let b = v1.startIndex
    guard v1.count >= Packet.headerSize else { return nil }
    let type = v1[b + 3]
    switch type {
    case MessageType.join.rawValue, MessageType.login.rawValue, MessageType.renewToken.rawValue:
      guard let packet = try? Packet.decode(v1) else { return nil }
      guard case .renewToken(let text) = packet.message else {
        return ask(packet, now: now, into: &out)
      }
      Self.parse(text, crypto: crypto, cached: &renewalText, parsed: &renewal)
      guard let renewal else {
        return .tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0))
      }
      payload.removeAll(keepingCapacity: true)
      payload.append(type)
      payload.append(contentsOf: renewal.sent)
    default:
      // Type byte and body; zeros to 9 bytes (every device datagram at least 42), and a
      // CHANNEL_OPERATION's name zero-filled to 63 so its size does not tell the name's.
      payload.removeAll(keepingCapacity: true)
      payload.append(type)
      payload.append(contentsOf: v1[(b + Packet.headerSize)...])
      let size = type == MessageType.channelOperation.rawValue ? 74 : 9
      while payload.count < size { payload.append(0) }
    }
    // Under the confirmed keys; before any ACCEPT, under the CONFIRM's (the edge may hold
    // the session already: a LEAVE should reach it).
    if data != nil {
      try? data?.seal(payload[...], into: &out)
    } else {
      try? held?.data.seal(payload[...], into: &out)
    }
    return nil
  }

  /// A JOIN or LOGIN: the request is taken from it, the token parsed (once per text), then
  /// the held CONFIRM or a new INIT goes out. Returns the refusal the session gets for a
  /// token that is not a version 2 one, or whose public expiry the device's clock passed.
  private mutating func ask(_ packet: Packet, now: Instant, into out: inout [UInt8]) -> Message? {
    if packet.cookie != boundCookie {  // another session: nothing of the last one is kept
      forget()
      boundCookie = packet.cookie
    }
    let text: Token
    let isLogin: Bool
    switch packet.message {
    case .join(let join):
      text = join.token
      isLogin = false
      request = HandshakeRequest(
        flags: join.isRejoin ? HandshakeRequest.rejoinFlag : 0, uid: join.uid,
        appID: join.appID.bytes, kind: HandshakeRequest.channelKind, name: join.channel.bytes)
    case .login(let login):
      text = login.token
      isLogin = true
      request = HandshakeRequest(
        flags: login.isRelogin ? HandshakeRequest.rejoinFlag : 0, appID: login.appID.bytes,
        kind: HandshakeRequest.loginKind, name: login.userID.bytes)
    default:
      return nil
    }
    Self.parse(text, crypto: crypto, cached: &tokenText, parsed: &token)
    guard let token else { return isLogin ? .loginRefuse(code: 5) : .refuse(.invalidToken) }
    if data == nil, unixTime != 0, token.expiry != 0, unixTime >= token.expiry {
      return isLogin ? .loginRefuse(code: 6) : .refuse(.tokenExpired)
    }
    sessionAsked = true
    attempt(now: now, into: &out)
    return nil
  }

  /// `text` parsed as a version 2 token into `parsed` (nil if it is not one), unless it is
  /// `cached`, the text `parsed` came from: a RENEW_TOKEN repeated with every heartbeat,
  /// and every retry's JOIN, are parsed once.
  @inline(never)
  private static func parse(
    _ text: Token, crypto: Crypto, cached: inout [UInt8], parsed: inout TokenV2?
  ) {
    guard text.bytes != cached else { return }
    parsed = try? TokenV2(text: text.bytes[...], crypto: crypto)
    cached = text.bytes
  }

  /// The held CONFIRM while its ticket lasts; else a new INIT, resuming the confirmed
  /// session if there is one, with `mac2` while a cookie is held.
  mutating func attempt(now: Instant, into out: inout [UInt8]) {
    if let held, now < held.until {
      out.append(contentsOf: held.confirm)
      return
    }
    dropHeld()
    guard let token, let request else { return }
    let resume = data.map {
      DeviceHandshake<Crypto>.Resume(sessionID: $0.sessionID, key: resumeKey)
    }
    let cookie = now < cookieUntil ? self.cookie : nil
    guard
      let initiation = try? handshake.initiate(
        token: token, request: request, resume: resume, cookie: cookie)
    else { return }
    out.append(contentsOf: initiation.bytes)
  }

  /// Past a rekey limit (or the hard one), a resumed handshake while the session goes on
  /// (§12.10): at most one attempt a second, until its ACCEPT brings new keys.
  private mutating func rekeyIfDue<Notification>(
    _ output: inout SessionOutput<Notification>, now: Instant
  ) {
    if let range = rekey(now: now, into: &output.bytes) {
      output.actions.append(.send(Datagram(range: range)))
    }
  }

  /// The rekey's datagram appended to `bytes`, if one is due: its range.
  @inline(never)
  private mutating func rekey(now: Instant, into bytes: inout [UInt8]) -> Range<Int>? {
    guard let data, !sessionAsked, now >= rekeyNotBefore,
      data.usage.status != .fresh || data.window.highest >= limits.rekeyAfterMessages
    else { return nil }
    rekeyNotBefore = now + .seconds(1)
    let start = bytes.count
    attempt(now: now, into: &bytes)
    return bytes.count > start ? start..<bytes.count : nil
  }
}

extension LinkSession {
  /// Hands the session `message` as the edge's packet of its own session.
  @inline(never)
  mutating func receive(
    _ message: Message, now: Instant, into output: inout SessionOutput<Notification>,
    cookie: UInt64
  ) {
    receive(Packet(cookie: cookie, message: message), now: now, into: &output)
  }
}
