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
      let answer = rewrite(&output.entries, &output.bytes, from: first, now: now)
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

  /// One pass over the actions (`entries`, ``SessionOutput``'s) from `first`: each send
  /// rewritten or removed. Returns the synthetic answer a datagram asked for (a refusal of a
  /// token), if any. Not generic: the output's actions are entries of one type for both
  /// profiles. Version 2's datagram is written past the end of the output's bytes and the
  /// send pointed at it: the session's bytes stay behind, unsent, until the driver empties
  /// the output (no copy of them is moved aside).
  @inline(never)
  private mutating func rewrite(
    _ entries: inout [OutputEntry], _ bytes: inout [UInt8], from first: Int, now: Instant
  ) -> LocalAnswer {
    var answer = LocalAnswer.none
    var index = first
    while index < entries.count {
      guard let range = entries[index].sendRange else {
        index += 1
        continue
      }
      let start = bytes.count
      let local = translate(range, now: now, into: &bytes)
      if local != .none { answer = local }
      if bytes.count > start {
        entries[index] = OutputEntry(sending: start..<bytes.count)
        index += 1
      } else {
        entries.remove(at: index)
      }
    }
    return answer
  }

  /// Appends version 2's datagram for the session's version 1 datagram at `v1` of `out`
  /// (nothing if none); returns the synthetic answer the session must get instead, if any.
  @inline(never)
  private mutating func translate(
    _ v1: Range<Int>, now: Instant, into out: inout [UInt8]
  ) -> LocalAnswer {
    guard v1.count >= Packet.headerSize else { return .none }
    let type = out[v1.lowerBound + 3]
    if type == MessageType.join.rawValue || type == MessageType.login.rawValue {
      return ask(v1, now: now, into: &out)
    }
    // DATA, written straight into `out`: room for the header, the payload (type byte and
    // body), then sealed there.
    let start = out.count
    grow(&out, by: SealedData<Crypto.Cipher>.headerLength)
    out.appendByte(type)
    if type == MessageType.renewToken.rawValue {
      // The token's text: a 2-byte length, then the text, to the end. Its `W` is sent.
      let crypto = crypto
      hasRenewal = out.withUnsafeBytes {
        let v1 = piece($0, v1.lowerBound, v1.count)
        var offset = Packet.headerSize
        let text = field(v1, &offset, width: 2)
        return offset == v1.count && renewal.read(text, crypto: crypto)
      }
      guard hasRenewal else {
        truncate(&out, to: start)
        return .renewalRefused
      }
      renewal.withStoredBytes { append(piece($0, 0, TokenV2.secretOffset), to: &out) }
    } else {
      // The body (copied within `out`, past its end); zeros to 9 bytes of payload (every
      // device datagram at least 42), and a CHANNEL_OPERATION's name zero-filled to 63 so
      // its size does not tell the name's.
      for index in (v1.lowerBound + Packet.headerSize)..<v1.upperBound {
        out.appendByte(out[index])
      }
      let size = type == MessageType.channelOperation.rawValue ? 74 : 9
      grow(&out, by: start + SealedData<Crypto.Cipher>.headerLength + size - out.count)
    }
    // Under the CONFIRM's keys while one is out (the edge may hold its session already: a
    // LEAVE should reach it; and a resume's CONFIRM renames the old session at the edge, so
    // the old keys' datagrams would draw its RESET), else under the confirmed keys.
    seal(&out, from: start, underHeld: held != nil)
    return .none
  }

  /// Seals the DATA datagram written in `out` from `start` (``SealedData/seal(_:from:)``)
  /// under the held RESPONSE's keys or the confirmed ones; without them (or past their
  /// limits) nothing is sent, `out` cut back to `start`.
  @inline(never)
  mutating func seal(_ out: inout [UInt8], from start: Int, underHeld: Bool) {
    if underHeld, held != nil {
      try? held?.data.seal(&out, from: start)
    } else if !underHeld, confirmed {
      try? data?.seal(&out, from: start)
    } else {
      truncate(&out, to: start)
    }
  }

  /// A JOIN or LOGIN (the session's own bytes, §3's layout): the request `Q` is written
  /// from its fields, read by offset, and the token parsed; then the held CONFIRM or a new
  /// INIT goes out. Returns the refusal the session gets for a token that is not a version
  /// 2 one, or whose public expiry the device's clock passed. Bytes of another layout (no
  /// session writes them) send nothing.
  @inline(never)
  private mutating func ask(_ v1: Range<Int>, now: Instant, into out: inout [UInt8])
    -> LocalAnswer
  {
    var request = InlineBytes()
    let isLogin = out[v1.lowerBound + 3] == MessageType.login.rawValue
    let text = out.withUnsafeBytes { bytes in
      request.withUnsafeMutableBytes {
        Self.writeRequest(piece(bytes, v1.lowerBound, v1.count), isLogin: isLogin, into: $0)
      }
    }
    guard let text else { return .none }
    let cookie = out.withUnsafeBytes { bigEndian($0, at: v1.lowerBound + 4, width: 8) }
    if cookie != boundCookie {  // another session: nothing of the last one is kept
      forget()
      boundCookie = cookie
    }
    self.request = request
    hasRequest = true
    let crypto = crypto
    hasToken = out.withUnsafeBytes {
      token.read(piece($0, v1.lowerBound + text.lowerBound, text.count), crypto: crypto)
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

  /// `Q` (§12.5) from a JOIN (uid `u32`, flags, app id, channel, token) or a LOGIN (flags,
  /// app id, user id, token) into `q` (zeros); returns where the token's text is in `v1`.
  /// Nil if the bytes are not exactly that layout, or a name is longer than its room in
  /// `Q`.
  private static func writeRequest(
    _ v1: UnsafeRawBufferPointer, isLogin: Bool, into q: UnsafeMutableRawBufferPointer
  ) -> Range<Int>? {
    // Both layouts are big-endian and put each name's one-byte length right before it, as
    // `Q` does: the uid and each name go across as they are, length and all, in one copy.
    var offset = Packet.headerSize
    if !isLogin {
      guard copy(piece(v1, offset, 4), into: q, at: 5) else { return nil }
      offset += 4
    }
    let flags = bigEndian(v1, at: offset, width: 1)
    offset += 1
    var at = 9  // the app id; then the channel or user id at 75
    while at < 76 {
      let count = Int(bigEndian(v1, at: offset, width: 1)) + 1
      let name = piece(v1, offset, count)
      guard count <= 65, name.count == count, copy(name, into: q, at: at) else { return nil }
      offset += count
      at += 66
    }
    let textStart = offset + 2
    let text = field(v1, &offset, width: 2)
    guard offset == v1.count, flags <= 1 else { return nil }
    q[0] = UInt8(truncatingIfNeeded: flags)  // bit 0: rejoin or RELOGIN, as version 1's
    q[1] = HandshakeRequest.spokenVersion
    q[74] = isLogin ? HandshakeRequest.loginKind : HandshakeRequest.channelKind
    return textStart..<(textStart + text.count)
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

/// The length-prefixed field at `offset` of `bytes` (its length `width` bytes, big-endian),
/// `offset` moved past it; empty, and `offset` past the end, if it does not fit.
@inline(never)
func field(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, width: Int)
  -> UnsafeRawBufferPointer
{
  let length = Int(bigEndian(bytes, at: offset, width: width))
  let value = piece(bytes, offset + width, length)
  offset = value.count == length ? offset + width + length : bytes.count + 1
  return value
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
