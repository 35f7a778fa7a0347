// SPDX-License-Identifier: Apache-2.0
// MARK: - What the session sends

extension SecureLink {
  /// Replaces the datagrams of `output` from action `first` on (what the session wrote in
  /// the entry point just called) with what version 2 sends, each send pointed at it:
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
    while true {
      let answer = rewrite(&output.entries, &output.bytes, output.packets, from: first, now: now)
      first = output.entries.count
      guard answer != .none else { break }
      // Fed after the rewrite: the session appends to the output it reads from.
      session.receive(message(for: answer), now: now, into: &output)
    }
    settle(sessionCookie: session.link.cookie, &output.entries, &output.bytes, now: now)
  }

  /// After a rewrite: a session that ended (its cookie 0) leaves nothing of it kept; past a
  /// rekey limit (or the hard one), a resumed handshake while the session goes on (§12.10).
  /// Not generic (one copy for both profiles).
  @inline(never)
  mutating func settle(
    sessionCookie: UInt64, _ entries: inout [OutputEntry], _ bytes: inout [UInt8], now: Instant
  ) {
    if boundCookie != 0, sessionCookie == 0 {
      forget()
      boundCookie = 0
    }
    let start = bytes.count
    rekey(now: now, into: &bytes)
    OutputEntry.sendWritten(from: start, entries: &entries, bytes: bytes)
  }

  /// One pass over the actions (`entries`, ``SessionOutput``'s) from `first`: each packet
  /// the session sent replaced with version 2's datagram, or removed. Returns the synthetic
  /// answer a packet asked for (a refusal of a token), if any. Not generic: the output's
  /// actions are entries of one type for both profiles. Version 2's datagram is written at
  /// the end of the output's bytes and the entry pointed at it.
  @inline(never)
  private mutating func rewrite(
    _ entries: inout [OutputEntry], _ bytes: inout [UInt8], _ packets: [Packet],
    from first: Int, now: Instant
  ) -> LocalAnswer {
    var answer = LocalAnswer.none
    var index = first
    while index < entries.count {
      guard entries[index].slot == -2 else {
        index += 1
        continue
      }
      let start = bytes.count
      let local = packets.withUnsafeBufferPointer {
        translate($0[Int(entries[index].key)], now: now, into: &bytes)
      }
      if local != .none { answer = local }
      if bytes.count > start {
        OutputEntry.put(OutputEntry(sending: start..<bytes.count), at: index, in: &entries)
        index += 1
      } else {
        entries.remove(at: index)
      }
    }
    return answer
  }

  /// Appends version 2's datagram for the session's `packet` to `out` (nothing if none);
  /// returns the synthetic answer the session must get instead, if any.
  @inline(never)
  private mutating func translate(
    _ packet: borrowing Packet, now: Instant, into out: inout [UInt8]
  ) -> LocalAnswer {
    // DATA, written straight into `out`: room for the header, the payload (type byte and
    // body, as version 1's body, §12.7), then sealed there.
    switch packet.message {
    case .join(let join):
      return ask(
        cookie: packet.cookie, login: false, flags: join.isRejoin, uid: join.uid,
        app: join.appID.bytes, name: join.channel.bytes, token: join.token.bytes, now: now,
        into: &out)
    case .login(let login):
      return ask(
        cookie: packet.cookie, login: true, flags: login.isRelogin, uid: 0,
        app: login.appID.bytes, name: login.userID.bytes, token: login.token.bytes, now: now,
        into: &out)
    default: break
    }
    let start = out.count
    grow(&out, by: SealedData<Crypto.Cipher>.headerLength)
    var size = 9  // zeros to 9 bytes of payload: every device datagram at least 42
    switch packet.message {
    case .renewToken(let token):
      // Its `W` is sent: the token's text is never sent.
      let crypto = crypto
      hasRenewal = token.bytes.withUnsafeBytes { renewal.read($0, crypto: crypto) }
      guard hasRenewal else {
        truncate(&out, to: start)
        return .renewalRefused
      }
      out.appendByte(MessageType.renewToken.rawValue)
      renewal.withStoredBytes { append(piece($0, 0, TokenV2.secretOffset), to: &out) }
    case .heartbeat(let sequence):
      out.appendByte(MessageType.heartbeat.rawValue)
      out.appendBigEndian(UInt64(sequence), byteCount: 4)
    case .leave:
      out.appendByte(MessageType.leave.rawValue)
    case .loginHeartbeat(let sequence, let session, let received):
      out.appendByte(MessageType.loginHeartbeat.rawValue)
      out.appendBigEndian(UInt64(sequence) << 32 | UInt64(session), byteCount: 8)
      out.appendBigEndian(UInt64(received), byteCount: 4)
    case .logout:
      out.appendByte(MessageType.logout.rawValue)
    case .channelOperation(let operation):
      // The name zero-filled to 63, so the datagram's size does not tell the name's.
      out.appendByte(MessageType.channelOperation.rawValue)
      out.appendBigEndian(
        UInt64(operation.session) << 32 | UInt64(operation.sequence), byteCount: 8)
      out.appendByte(operation.kind.rawValue)
      out.appendByte(UInt8(truncatingIfNeeded: operation.channel.bytes.count))
      operation.channel.bytes.withUnsafeBytes { append($0, to: &out) }
      size = 74
    default:  // a server's message: no session sends one
      truncate(&out, to: start)
      return .none
    }
    grow(&out, by: start + SealedData<Crypto.Cipher>.headerLength + size - out.count)
    // Under the CONFIRM's keys while one is out (the edge may hold its session already: a
    // LEAVE should reach it; and a resume's CONFIRM renames the old session at the edge, so
    // the old keys' datagrams would draw its RESET), else under the confirmed keys.
    seal(&out, from: start, underHeld: nil)
    return .none
  }

  /// Seals the DATA datagram written in `out` from `start` (``SealedData/seal(_:from:)``)
  /// under the held RESPONSE's keys or the confirmed ones (nil: the held ones if a
  /// RESPONSE is held); without them (or past their limits) nothing is sent, `out` cut back
  /// to `start`. The held RESPONSE is tested here, where it is held: a caller's
  /// `held != nil` copied it (457 bytes) to the stack at every DATA datagram (issue 26).
  @inline(never)
  mutating func seal(_ out: inout [UInt8], from start: Int, underHeld: Bool?) {
    if underHeld != false, held != nil {
      try? held?.data.seal(&out, from: start)
    } else if underHeld != true, confirmed {
      try? data?.seal(&out, from: start)
    } else {
      truncate(&out, to: start)
    }
  }

  /// A JOIN or LOGIN: the request `Q` is written from its fields and the token parsed;
  /// then the held CONFIRM or a new INIT goes out. Returns the refusal the session gets for
  /// a token that is not a version 2 one, or whose public expiry the device's clock passed.
  @inline(never)
  private mutating func ask(
    cookie: UInt64, login: Bool, flags: Bool, uid: UInt32, app: [UInt8], name: [UInt8],
    token text: [UInt8], now: Instant, into out: inout [UInt8]
  ) -> LocalAnswer {
    if cookie != boundCookie {  // another session: nothing of the last one is kept
      forget()
      boundCookie = cookie
    }
    request.withUnsafeMutableBytes { q in
      Self.writeRequest(login: login, flags: flags, uid: uid, app: app, name: name, into: q)
    }
    hasRequest = true
    // The same array, not only equal bytes: ``parsedText`` holds it, so its storage can be
    // neither freed nor changed (an array shared is copied before a write), and a token
    // parsed already is the parse of these bytes. Nonempty only beside a parsed token.
    let same = text.withUnsafeBufferPointer { text in
      parsedText.withUnsafeBufferPointer { $0.baseAddress == text.baseAddress }
    }
    if parsedText.isEmpty || !same {
      let crypto = crypto
      hasToken = text.withUnsafeBytes { token.read($0, crypto: crypto) }
      parsedText = hasToken ? text : []
    }
    guard hasToken else { return .invalidToken }
    let expiry = token.expiryInPlace()
    if !confirmed, unixTime != 0, expiry != 0, unixTime >= expiry {
      return .tokenExpired
    }
    sessionAsked = true
    attempt(now: now, into: &out)
    return .none
  }

  /// The version 1 message a local answer stands for: the edge's refusal of the join or
  /// login (by the kind of the last request) or of the renewal.
  @inline(never)
  private mutating func message(for answer: LocalAnswer) -> Message {
    let isLogin = isLoginRequest()
    switch answer {
    case .invalidToken: return isLogin ? .loginRefuse(code: 5) : .refuse(.invalidToken)
    case .tokenExpired: return isLogin ? .loginRefuse(code: 6) : .refuse(.tokenExpired)
    case .none, .renewalRefused:
      return .tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0))
    }
  }

  /// `Q` (§12.5) from a JOIN's or LOGIN's fields into `q`, every byte written (what the
  /// names do not fill is zero). The names fit their room: an app id and a user id are at
  /// most 64 bytes, a channel name 63.
  private static func writeRequest(
    login: Bool, flags: Bool, uid: UInt32, app: [UInt8], name: [UInt8],
    into q: UnsafeMutableRawBufferPointer
  ) {
    for index in 0..<HandshakeRequest.size { q[index] = 0 }
    q[0] = flags ? 1 : 0  // bit 0: rejoin or RELOGIN, as version 1's
    q[1] = HandshakeRequest.spokenVersion
    putBigEndian(UInt64(uid), width: 4, into: q, at: 5)
    q[9] = UInt8(truncatingIfNeeded: app.count)
    _ = app.withUnsafeBytes { copy($0, into: piece(q, 10, 64), at: 0) }
    q[74] = login ? HandshakeRequest.loginKind : HandshakeRequest.channelKind
    q[75] = UInt8(truncatingIfNeeded: name.count)
    _ = name.withUnsafeBytes { copy($0, into: piece(q, 76, 64), at: 0) }
  }

  /// The held CONFIRM while its ticket lasts; else a new INIT, resuming the confirmed
  /// session if there is one, with `mac2` while a cookie is held.
  @inline(never)
  mutating func attempt(now: Instant, into out: inout [UInt8]) {
    if let until = held?.until, now < until {
      held?.confirm.withUnsafeMutableBytes {
        append(UnsafeRawBufferPointer(piece($0, 0, ConfirmMessage.size)), to: &out)
      }
      return
    }
    dropHeld()
    guard hasToken, hasRequest else { return }
    let start = out.count
    grow(&out, by: InitMessage.size)
    let resumeID = data?.sessionID ?? 0
    let resumes = confirmed
    let hasCookie = now < cookieUntil
    // The token and the request read where they are held, through their mutable access
    // (the handshake is another stored property, so the accesses are disjoint; the
    // read-only `withUnsafeBytes` of an inline value copies its 256 bytes first, and would
    // leave the device secret on the stack); `k_resume` then the cookie in one local (a
    // tuple is laid out in order), read in place and wiped: one closure fewer.
    var keys = (resumeKey, cookie)
    let crypto = crypto
    defer { withUnsafeMutableBytes(of: &keys) { crypto.wipe($0) } }
    let made = out.withUnsafeMutableBytes { out in
      token.withStoredBytes { token in
        request.withUnsafeMutableBytes { request in
          withUnsafeBytes(of: &keys) { keys in
            do throws(HandshakeError) {
              try handshake.initiate(
                into: piece(out, start, InitMessage.size),
                token: piece(token, 0, TokenV2.secretOffset + 32),
                request: UnsafeRawBufferPointer(piece(request, 0, HandshakeRequest.size)),
                resumeID: resumeID,
                resumeKey: piece(keys, 0, resumes ? KeyBytes.count : 0),
                cookie: piece(keys, KeyBytes.count, hasCookie ? 16 : 0))
              return true
            } catch {
              return false
            }
          }
        }
      }
    }
    if !made { truncate(&out, to: start) }
  }

  /// The rekey's datagram appended to `bytes`, if one is due: at most one attempt a
  /// second, until its ACCEPT brings new keys.
  @inline(never)
  private mutating func rekey(now: Instant, into bytes: inout [UInt8]) {
    // Asked of the keys where they are held (a binding would copy them).
    guard data?.rekeyDue == true, !sessionAsked, now >= rekeyNotBefore else { return }
    rekeyNotBefore = now + .seconds(1)
    attempt(now: now, into: &bytes)
  }
}

extension SecureLink {
  /// Whether the last request was a LOGIN's: its kind, read where it is held (the
  /// read-only `withUnsafeBytes` of an inline value copies its 256 bytes first).
  mutating func isLoginRequest() -> Bool {
    request.withUnsafeMutableBytes { $0[74] } == HandshakeRequest.loginKind
  }
}

/// What the layer answers the session itself, in place of the edge (§12.4, §12.10): a
/// code, made into the version 1 message only when it is handed over.
enum LocalAnswer {
  case none
  /// The JOIN's or LOGIN's token is not a version 2 one: the edge's invalid-token refusal.
  case invalidToken
  /// Its public expiry has passed by the device's clock: the edge's expired-token refusal.
  case tokenExpired
  /// The RENEW_TOKEN's token is not a version 2 one: a refused TOKEN_RENEWED.
  case renewalRefused
}

extension LinkSession {
  /// Hands the session `message` as the edge's packet of its own session: what its
  /// `receive(_ packet:)` does with a packet of its cookie, with no packet made (a session
  /// with no cookie counts it foreign, as there).
  @inline(never)
  mutating func receive(
    _ message: Message, now: Instant, into output: inout SessionOutput<Notification>
  ) {
    _ = link.tick(now)
    if link.cookie != 0 {
      handle(message, now: link.clock, into: &output)
    } else {
      link.counters.foreign &+= 1
    }
    advance(to: link.clock, into: &output)
  }
}
