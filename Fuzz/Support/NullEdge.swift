// SPDX-License-Identifier: Apache-2.0
// Only in the targets built with -D TETHER_NULL_CRYPTO (fuzz-decode, fuzz-link).
#if TETHER_NULL_CRYPTO
  @_spi(Link) import TetherCore

  /// The edge's half of protocol version 2 over the null seam, for fuzz-decode and
  /// fuzz-link: tokens, the handshake's answers (made by TetherCore's ``EdgeHandshake``, as
  /// the edge makes them), DATA, RESET. With the null AEAD a DATA datagram is its header, its
  /// payload in clear and 16 zero bytes.
  enum NullEdge {
    /// The device secret of every token the fuzzers give a session: an INIT of any of them
    /// opens under it.
    static let deviceSecret: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    /// The edge's ephemeral secret (its public key, with the null X25519).
    static let edgeSecret = [UInt8](repeating: 0xA5, count: 32)
    static let ticket = [UInt8](repeating: 0x7C, count: 176)

    /// A version 2 token's text (§12.4): `"2."` and base64url of `T`: version 2, key id 1,
    /// `expiry` (unix seconds, 0: never), the device secret, then 208 bytes of `filler` for
    /// the part sealed for the edge (which only the edge opens, and this edge does not).
    static func tokenText(expiry: UInt64 = 0, filler: UInt8 = 0x5A) -> [UInt8] {
      var binary: [UInt8] = [2, 0, 1]
      binary.appendBigEndian(expiry)
      binary += deviceSecret
      binary += [UInt8](repeating: filler, count: 208)
      return Array("2.".utf8) + NullSeam(random: NullRandom(seed: 0)).base64URLEncode(binary[...])
    }

    static func token(expiry: UInt64 = 0, filler: UInt8 = 0x5A) -> Token {
      try! Token(validating: tokenText(expiry: expiry, filler: filler))
    }

    /// The edge's handshake state for `initiation` (an INIT a device sent), nil if it does
    /// not open under ``deviceSecret``.
    static func opening(_ initiation: ArraySlice<UInt8>, crypto: NullSeam) -> EdgeHandshake<
      NullSeam
    >? {
      guard let message = try? InitMessage(decoding: initiation) else { return nil }
      return try? EdgeHandshake(opening: message, deviceSecret: deviceSecret, crypto: crypto)
    }

    /// The RESPONSE to `initiation`, giving session `sessionID`.
    static func response(
      to initiation: ArraySlice<UInt8>, sessionID: UInt64, lifetimeMs: UInt32 = 10_000,
      crypto: NullSeam
    ) -> [UInt8]? {
      guard let edge = opening(initiation, crypto: crypto),
        let pending = try? edge.respond(
          ephemeralSecret: edgeSecret, edgeNonce: [UInt8](repeating: 0xE0, count: 16),
          sessionID: sessionID, ticketLifetimeMs: lifetimeMs)
      else { return nil }
      return (try? pending.finish(ticket: ticket[...]))?.bytes
    }

    /// The COOKIE_REPLY to `initiation`.
    static func cookieReply(to initiation: ArraySlice<UInt8>, crypto: NullSeam) -> [UInt8]? {
      (try? opening(initiation, crypto: crypto)?.cookieReply(
        cookie: [UInt8](repeating: 0xC0, count: 16)))?.bytes
    }

    /// The REFUSE_SEALED to `initiation`.
    static func refusal(
      to initiation: ArraySlice<UInt8>, reason: UInt8, detail: UInt8 = 0, crypto: NullSeam
    ) -> [UInt8]? {
      (try? opening(initiation, crypto: crypto)?.refusal(reason: reason, detail: detail))?.bytes
    }

    /// The REFUSE_CLEAR to `initiation` (its `N_d` echoed).
    static func refuseClear(to initiation: ArraySlice<UInt8>) -> [UInt8]? {
      guard initiation.count == InitMessage.size else { return nil }
      let start = initiation.startIndex
      return (try? RefuseClearMessage(deviceNonce: initiation[(start + 2)..<(start + 18)]))?.bytes
    }

    /// DATA of `sessionID` under `counter` carrying `payload`, sealed by the null AEAD.
    static func data(sessionID: UInt64, counter: UInt64, payload: [UInt8]) -> [UInt8] {
      var bytes: [UInt8] = [SealedData<NullCipher>.kind]
      bytes.appendBigEndian(sessionID)
      bytes.appendBigEndian(counter)
      return bytes + payload + [UInt8](repeating: 0, count: NullCipher.tagLength)
    }

    /// The payload of a DATA datagram (null AEAD: in clear): nil for anything shorter than a
    /// header and a tag.
    static func payload(ofData datagram: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
      let start = datagram.startIndex
      guard datagram.count >= 33 else { return nil }
      return datagram[(start + 17)..<(datagram.endIndex - 16)]
    }

    /// The payload the edge seals for `message` (§12.7): version 1's type byte and body, then
    /// the reset value after an ACCEPT or LOGIN_ACCEPT, the detail after a REFUSE or
    /// LOGIN_REFUSE.
    static func payload(_ message: Message, resetValue: [UInt8] = resetValue, detail: UInt8 = 0)
      -> [UInt8]
    {
      let v1 = Packet(cookie: 0, message: message).encoded
      var payload = [v1[3]] + v1[Packet.headerSize...]
      switch message {
      case .accept, .loginAccept: payload += resetValue
      case .refuse, .loginRefuse: payload.append(detail)
      default: break
      }
      return payload
    }

    /// The reset value the fuzzers' ACCEPTs give.
    static let resetValue = [UInt8](repeating: 0x3E, count: 16)

    /// RESET of `sessionID` with `value`.
    static func reset(sessionID: UInt64, value: [UInt8] = resetValue) -> [UInt8] {
      var bytes: [UInt8] = [ResetMessage.kind]
      bytes.appendBigEndian(sessionID)
      return bytes + value
    }

    /// The accept of `login`'s profile, the token never expiring.
    static func accept(login: Bool, resumed: Bool = false) -> Message {
      login
        ? .loginAccept(LoginAccept(serverTimeMs: 5, tokenTimeLeftMs: 0, resumed: resumed))
        : .accept(JoinAccept(uid: 1001, serverTimeMs: 5, tokenTimeLeftMs: 0, resumed: resumed))
    }
  }

  /// A session behind its version 2 layer on the null seam, driven as the C driver drives
  /// them (Sources/Tether/Connection/Profile.swift): each entry point of the session, then
  /// the layer's rewrite; each datagram through the layer. ``output`` holds what goes on the
  /// wire after the last step.
  struct LinkedSubject<Session: LinkSession> {
    var session: Session
    var link: SecureLink<NullSeam>
    var output = SessionOutput<Session.Notification>()

    init(session: Session, crypto: NullSeam) {
      self.session = session
      link = SecureLink(crypto: crypto)
    }

    /// Runs `body` (an entry point of the session) at `now`, then the layer's rewrite.
    @discardableResult
    mutating func call<T>(
      at now: Instant,
      _ body: (inout Session, Instant, inout SessionOutput<Session.Notification>) -> T
    ) -> T {
      output.removeAll()
      let result = body(&session, now, &output)
      link.secure(&output, from: 0, session: &session, now: now)
      return result
    }

    /// One datagram from the socket at `now`, through the layer.
    mutating func receive(_ datagram: ArraySlice<UInt8>, at now: Instant) {
      output.removeAll()
      link.receive(datagram, session: &session, now: now, into: &output)
    }

    /// Runs the session's deadlines due by `now`.
    mutating func advance(to now: Instant) {
      call(at: now) { s, now, out in s.advance(to: now, into: &out) }
    }

    /// The last datagram of the last step whose kind is `kind`.
    func sent(_ kind: UInt8) -> ArraySlice<UInt8>? {
      output.datagrams.last { $0.first == kind }
    }
  }
  extension LinkedSubject {
    /// Answers the INIT of the last step with a RESPONSE giving `sessionID`, then the CONFIRM
    /// that follows with DATA carrying `accept` (counter 0): the session is on keys of that
    /// id. False if a step did not send what the next needs.
    mutating func answer(sessionID: UInt64, accept: Message, at now: Instant) -> Bool {
      guard let initiation = sent(InitMessage.kind),
        let response = NullEdge.response(to: initiation, sessionID: sessionID, crypto: link.crypto)
      else { return false }
      receive(response[...], at: now)
      guard sent(ConfirmMessage.kind) != nil else { return false }
      let data = NullEdge.data(sessionID: sessionID, counter: 0, payload: NullEdge.payload(accept))
      receive(data[...], at: now)
      return link.sessionID == sessionID
    }
  }
#endif
