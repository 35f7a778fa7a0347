// SPDX-License-Identifier: Apache-2.0
// MARK: - What arrives

extension SecureLink {
  /// Takes one datagram from the socket, before the session:
  /// - a RESPONSE for an open attempt: the CONFIRM goes out at once; a COOKIE_REPLY: the
  ///   cookie is kept 120 s and a new INIT goes out at once; a refusal: the session gets
  ///   the version 1 refusal it stands for (§12.6's reasons);
  /// - DATA that opens: the session gets the message of its payload (an ACCEPT's reset
  ///   value is kept and the new keys replace the old); a PATH_CHALLENGE is answered at
  ///   once and nothing reaches the session;
  /// - a RESET with this session's id and value: the session gets SESSION_UNKNOWN.
  /// Anything else changes nothing but a count. What the session answers is rewritten by
  /// ``secure(_:from:session:now:)``, and what fell due by `now` runs, as after every
  /// entry point of a session.
  public mutating func receive<Session: LinkSession>(
    _ datagram: ArraySlice<UInt8>, session: inout Session, now: Instant,
    into output: inout SessionOutput<Session.Notification>
  ) {
    let start = output.bytes.count
    let first: Int
    do {  // the message ends here: a presence digest shares `payload`, which is reused next
      let message = take(datagram, now: now, into: &output.bytes)
      output.sendWritten(from: start)
      first = output.entries.count
      if let message {
        session.receive(message, now: now, into: &output)
      } else {
        session.advance(to: now, into: &output)
      }
    }
    secure(&output, from: first, session: &session, now: now)
  }

  /// What the datagram asks: a message for the session, or nil; datagrams to send at once
  /// are appended to `out`.
  private mutating func take(
    _ datagram: ArraySlice<UInt8>, now: Instant, into out: inout [UInt8]
  ) -> Message? {
    switch datagram.first {
    case SealedData<Crypto.Cipher>.kind:
      return open(datagram, now: now, into: &out)
    case ResetMessage.kind:
      // Only this session's id and value (compared in constant time) end it.
      guard datagram.count == ResetMessage.size, let id = data?.sessionID else { break }
      let resetValue = resetValue
      let crypto = crypto
      let matches = datagram.withUnsafeBytes { d in
        bigEndian(d, at: 1, width: 8) == id
          && withUnsafeBytes(of: resetValue) { crypto.constantTimeEqual(piece(d, 9, 16), $0) }
      }
      guard matches else { break }
      return .sessionUnknown
    default:
      guard handshake.openAttempts > 0 else { break }
      return answer(datagram, now: now, into: &out)
    }
    dropped &+= 1
    return nil
  }

  /// A handshake answer for one of the attempts: the CONFIRM (a RESPONSE), a new INIT (a
  /// COOKIE_REPLY) or the session's refusal; anything that does not open is dropped.
  @inline(never)
  private mutating func answer(
    _ datagram: ArraySlice<UInt8>, now: Instant, into out: inout [UInt8]
  ) -> Message? {
    var bytes = InlineBytes()  // the CONFIRM, or the cookie
    var keys = SessionKeys<Crypto>.Derived()
    let crypto = crypto
    defer { keys.wipe(crypto) }
    let taken: DeviceHandshake<Crypto>.Answer? = datagram.withUnsafeBytes { datagram in
      bytes.withUnsafeMutableBytes { bytes in
        do throws(HandshakeError) {
          return try handshake.receive(datagram, into: bytes, keys: &keys)
        } catch {
          return nil
        }
      }
    }
    switch taken {
    case .established(let sessionID, let lifetime):
      dropHeld()
      guard let sending = crypto.cipher(keyBytes: keys.deviceToEdge),
        let receiving = crypto.cipher(keyBytes: keys.edgeToDevice)
      else { break }
      held = HeldResponse(
        data: SealedData(
          sessionID: sessionID, sending: sending, receiving: receiving, limits: limits),
        resumeKey: keys.resume, confirm: bytes, until: now + .milliseconds(UInt64(lifetime)))
      bytes.withUnsafeMutableBytes {
        append(UnsafeRawBufferPointer(piece($0, 0, ConfirmMessage.size)), to: &out)
      }
      return nil
    case .cookie:
      cookie = bytes.withUnsafeMutableBytes {
        ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
      }
      cookieUntil = now + Self.cookieLifetime
      attempt(now: now, into: &out)
      return nil
    case .refused(.tokenNotOpened):
      return refusal(reason: RefuseReason.invalidToken.rawValue)
    case .refused(.sealed(let reason, _)):
      return refusal(reason: reason)
    case nil:
      break
    }
    dropped &+= 1
    return nil
  }

  /// The version 1 message a refusal of the handshake stands for (§12.6), for the session
  /// that asked; nil for a rekey's (the session goes on under its keys) or a reason the
  /// profile has none of. `reason` is a channel's (1 … 5, 6 BANNED) or a login code.
  private mutating func refusal(reason: UInt8) -> Message? {
    dropHeld()
    guard sessionAsked, hasRequest else { return nil }
    sessionAsked = false
    if isLoginRequest() {
      // REFUSE_CLEAR is the login's INVALID_TOKEN (5); the channel's reason 3 is the same.
      return .loginRefuse(code: reason == RefuseReason.invalidToken.rawValue ? 5 : reason)
    }
    if reason == 6 { return .kick(.banned) }
    return RefuseReason(rawValue: reason).map { .refuse($0) }
  }

  /// A DATA datagram: opened under the held CONFIRM's keys or the confirmed ones (by its
  /// session id), its payload decoded.
  private mutating func open(
    _ datagram: ArraySlice<UInt8>, now: Instant, into out: inout [UInt8]
  ) -> Message? {
    guard datagram.count >= 17 else {
      dropped &+= 1
      return nil
    }
    let id = datagram.withUnsafeBytes { bigEndian($0, at: 1, width: 8) }
    let underHeld = held?.data.sessionID == id
    // Opened straight into `payload`, sized to the plaintext (the datagram less 33 bytes);
    // moved out of `self` meanwhile, so the keys can be used while it is written.
    var plaintext: [UInt8] = []
    swap(&plaintext, &payload)
    truncate(&plaintext, to: 0)
    grow(&plaintext, by: datagram.count - 33)
    let refusal: SealedData<Crypto.Cipher>.Refusal? = plaintext.withUnsafeMutableBytes { out in
      datagram.withUnsafeBytes { datagram in
        do throws(SealedData<Crypto.Cipher>.Refusal) {
          if underHeld {
            try held?.data.open(datagram, into: out)
          } else if data?.sessionID == id {
            try data?.open(datagram, into: out)
          } else {
            throw .malformed
          }
          return nil
        } catch {
          return error
        }
      }
    }
    swap(&plaintext, &payload)
    switch refusal {
    case nil: break
    case .replayed?: replayed &+= 1
    case .unopened?: unopened &+= 1
    case .malformed?, .exhausted?: dropped &+= 1
    }
    if refusal != nil { return nil }
    layerTook = false
    guard let message = decodePayload(underHeld: underHeld, into: &out) else {
      // What the layer took for itself (a PATH_CHALLENGE answered, a rekey's ACCEPT) is no
      // drop; anything else that reaches the session as nothing is.
      if !layerTook { dropped &+= 1 }
      return nil
    }
    return message
  }

  /// The payload just opened, as the version 1 message of its type (§12.7); nil for one
  /// that does not decode, or that nothing gets (a PATH_CHALLENGE, answered into `out`; a
  /// rekey's ACCEPT, whose keys replace the old ones).
  private mutating func decodePayload(underHeld: Bool, into out: inout [UInt8]) -> Message? {
    guard let type = payload.first else { return nil }
    var end = payload.endIndex
    switch type {
    case MessageType.accept.rawValue, MessageType.loginAccept.rawValue:
      end -= 16  // the reset value
    case MessageType.refuse.rawValue, MessageType.loginRefuse.rawValue:
      // Reason or code, then the detail (for logs only, 0 … 2): the layer's to map, with
      // no message decoded. A LOGIN_REFUSE's body is exactly its code (never 0) and the
      // detail.
      let count = payload.count
      guard count >= 3, payload[count - 1] <= 2 else { return nil }
      if type == MessageType.loginRefuse.rawValue, count != 3 || payload[1] == 0 { return nil }
      return underHeld ? refusal(reason: payload[1]) : nil
    case 0x8D:  // PATH_CHALLENGE: PATH_RESPONSE with its 8 bytes, at once
      guard payload.count == 9 else { return nil }
      let start = out.count
      grow(&out, by: SealedData<Crypto.Cipher>.headerLength)
      out.appendByte(0x09)
      payload.withUnsafeBytes { append(piece($0, 1, 8), to: &out) }
      seal(&out, from: start, underHeld: underHeld)
      layerTook = true
      return nil
    case MessageType.sessionUnknown.rawValue:
      return nil  // gone in version 2: RESET replaces it
    default:
      guard type >= 0x80 else { return nil }  // a device's message: no edge sends one
    }
    guard end > 0 else { return nil }
    var reader = ByteReader(payload[1..<end])
    guard let message = try? MessageType.decodeServerBody(type, &reader),
      (try? reader.expectEnd()) != nil
    else { return nil }
    // Decoded: what the layer does with it, by its type byte (no copy of the message).
    if type == MessageType.accept.rawValue || type == MessageType.loginAccept.rawValue {
      if underHeld {
        if !accepted() { return nil }
      } else if sessionAsked {
        // Under the confirmed keys while the session's join is a new handshake: the edge's
        // answer to a CONFIRM of those keys sent again, which this join did not send (a
        // replay from the device's address: §12.6's rule 4 answers it). It proves nothing
        // about this join's path: dropped, so a dead uplink is not reported healed.
        return nil
      }
    } else if type == MessageType.tokenRenewed.rawValue, payload[1] == 0, hasRenewal {
      token = renewal
      hasToken = true
      parsedText = []
    }
    return message
  }

  /// An ACCEPT under the held CONFIRM's keys: they become the session's, the old ones and
  /// the attempts are wiped, the reset value kept. Returns whether the session gets it
  /// (it asked; a rekey's ACCEPT is the layer's alone).
  @inline(never)
  private mutating func accepted() -> Bool {
    guard let held else { return false }
    dropHeld()  // its k_resume wiped where it was held; this copy becomes the session's
    let crypto = crypto
    resumeKey.withUnsafeMutableBytes { crypto.wipe($0) }
    resumeKey = held.resumeKey
    dropData()  // the old session's keys wiped before the new ones take their place
    data = held.data
    confirmed = true
    resetValue = payload.withUnsafeBytes {  // decodePayload kept 16
      let value = piece($0, $0.count - 16, 16)
      return (
        value.loadUnaligned(as: UInt64.self),
        value.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
      )
    }
    handshake.end()
    defer { sessionAsked = false }
    layerTook = !sessionAsked  // a rekey's ACCEPT: the layer's own
    return sessionAsked
  }
}
