// SPDX-License-Identifier: Apache-2.0
/// The device's half of the version 2 handshake (docs/PROTOCOL.md §12.5): writes each
/// attempt's INIT and takes the edge's answers to it. One value per join; sans-IO (the
/// session sends the bytes it returns and passes in what arrives).
///
/// It keeps its current and its previous attempt, so an answer to an INIT it has just
/// retried still completes. It takes an answer only for one of those attempts, and only if
/// it opens: anything else (forged, replayed, altered, another attempt's, arrived after the
/// handshake ended) throws and changes nothing. A handshake that completes or is refused
/// ends both attempts, wiping their secrets.
///
/// Each attempt is held inline (`N_d`, the ephemeral secret, then the transcript's `h2` and
/// `ck_e`, from which the answers' keys come), the seam writing into it: this is device
/// code, in the size budget of the Embedded library, where each array costs its allocation
/// and its reference counting (`make v2-size`).
public struct DeviceHandshake<Crypto: SessionCrypto> {
  public let crypto: Crypto
  /// The attempts; one not open holds zeros.
  private var current = Attempt()
  private var previous = Attempt()

  public init(crypto: Crypto) { self.crypto = crypto }

  /// How many attempts can still be answered (0, 1 or 2).
  public var openAttempts: Int { (current.isOpen ? 1 : 0) + (previous.isOpen ? 1 : 0) }

  /// One attempt: `N_d` and the ephemeral secret (drawn together, in this order), and the
  /// transcript where the INIT left it.
  private struct Attempt {
    var drawn: (nonce: (UInt64, UInt64), secret: KeyBytes) = ((0, 0), KeyBytes())
    var hash = KeyBytes()
    var chainingKey = KeyBytes()
    var isOpen = false
    /// A COOKIE_REPLY for it was taken: another (a replay of it) answers nothing (§12.6).
    var cookieTaken = false

    /// Whether `nonce` (16 bytes) is this attempt's `N_d`.
    func echoes(_ nonce: UnsafeRawBufferPointer) -> Bool {
      isOpen && nonce.count == 16 && nonce.loadUnaligned(as: UInt64.self) == drawn.nonce.0
        && nonce.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == drawn.nonce.1
    }

    /// Its secrets wiped through `crypto`, then closed.
    @inline(never)
    mutating func wipe(_ crypto: Crypto) {
      Swift.withUnsafeMutableBytes(of: &drawn) { crypto.wipe($0) }
      chainingKey.withUnsafeMutableBytes { crypto.wipe($0) }
      self = Attempt()
    }
  }

  /// A session to resume: its id and its `k_resume` (§12.10).
  public struct Resume {
    public let sessionID: UInt64
    public let key: [UInt8]
    public init(sessionID: UInt64, key: [UInt8]) {
      self.sessionID = sessionID
      self.key = key
    }
  }

  /// What an answer did, its bytes written into the caller's buffers (no array made: this
  /// is the device's path, ``receive(_:into:keys:)``).
  public enum Answer: Equatable, Sendable {
    /// A RESPONSE opened: the CONFIRM (201 bytes) is in the caller's buffer, the keys in its
    /// ``SessionKeys/Derived``; send the CONFIRM now and at each retry until an answer, or
    /// until `ticketLifetimeMs` has passed.
    case established(sessionID: UInt64, ticketLifetimeMs: UInt32)
    /// A COOKIE_REPLY opened: the cookie (16 bytes) is in the caller's buffer; keep it
    /// (120 s) and start a new attempt at once with it, for `mac2`.
    case cookie
    /// The edge refused the join.
    case refused(Refusal)
  }

  /// What an answer did.
  public enum Outcome {
    /// A RESPONSE opened: send ``Established/confirm`` now and at each retry until an
    /// answer, or until the ticket lifetime has passed; seal DATA with the keys.
    case established(Established)
    /// A COOKIE_REPLY opened: keep the cookie (120 s) and start a new attempt at once with
    /// it, for `mac2`.
    case cookie([UInt8])
    /// The edge refused the join.
    case refused(Refusal)
  }

  /// A completed handshake.
  public struct Established {
    /// The CONFIRM to send, the same bytes at every repeat.
    public let confirm: ConfirmMessage
    public let keys: SessionKeys<Crypto>
    /// How long the edge keeps the ticket, ms: the CONFIRM is repeated no longer.
    public let ticketLifetimeMs: UInt32
  }

  /// A refusal the edge sent for one of this device's attempts.
  public enum Refusal: Equatable, Sendable {
    /// REFUSE_CLEAR: the edge could not open the token (invalid token). Unsealed, so an
    /// on-path attacker who saw the INIT can forge it (docs/SECURITY.md).
    case tokenNotOpened
    /// REFUSE_SEALED, opened under `k_refuse`: a reason (channel: version 1's REFUSE reasons
    /// and 6 BANNED; login: the login error codes) and a detail (0 none, 1 channel full,
    /// 2 app full).
    case sealed(reason: UInt8, detail: UInt8)
  }

  /// Starts an attempt: draws `N_d` (16 bytes) then the ephemeral secret (32) through
  /// `crypto` (one draw of 48), writes the INIT into `out` (its first 469 bytes), the
  /// request `Q` (168 bytes) sealed under `k_req` with the resume fields set from
  /// `resumeID` and `resumeKey` (none when `resumeKey` is empty: flag clear, id and proof
  /// zeros, whatever `request` held), and `mac2` under `cookie` (none when empty). `token`
  /// is `W` (219 bytes) then the device secret (32). The attempt before the previous one
  /// ends.
  /// - Throws: ``HandshakeError/malformed`` if a buffer has the wrong size;
  ///   ``HandshakeError/badKey`` if the seam refused a key (never with libsodium).
  public mutating func initiate(
    into out: UnsafeMutableRawBufferPointer, token: UnsafeRawBufferPointer,
    request: UnsafeRawBufferPointer, resumeID: UInt64, resumeKey: UnsafeRawBufferPointer,
    cookie: UnsafeRawBufferPointer
  ) throws(HandshakeError) {
    let message = piece(out, 0, InitMessage.size)
    guard message.count == InitMessage.size, token.count == TokenV2.secretOffset + 32,
      request.count == HandshakeRequest.size
    else { throw .malformed }
    guard
      start(
        into: message, token: token, request: request, resumeID: resumeID,
        resumeKey: resumeKey, cookie: cookie)
    else { throw .badKey }
  }

  /// ``initiate(into:token:request:resumeID:resumeKey:cookie:)`` past its size checks, with
  /// one exit (each exit of a function repeats its wipes): false if the seam refused a key.
  @inline(never)
  private mutating func start(
    into message: UnsafeMutableRawBufferPointer, token: UnsafeRawBufferPointer,
    request: UnsafeRawBufferPointer, resumeID: UInt64, resumeKey: UnsafeRawBufferPointer,
    cookie: UnsafeRawBufferPointer
  ) -> Bool {
    // One draw: N_d, then the ephemeral secret (the order the vectors draw them in), into
    // the new attempt; the public key straight into the INIT.
    var next = Attempt()
    let crypto = crypto
    withUnsafeMutableBytes(of: &next.drawn) { crypto.randomBytes(into: $0) }
    message[0] = InitMessage.kind
    message[1] = InitMessage.version
    let written = UnsafeRawBufferPointer(message)
    var transcript = HandshakeTranscript(crypto: crypto)
    let made =
      withUnsafeBytes(of: next.drawn.nonce) { copy($0, into: message, at: 2) }
      && next.drawn.secret.withBytesInPlace {
        crypto.x25519PublicKey(into: piece(message, 18, 32), secret: $0)
      }
      && copy(piece(token, 0, TokenV2.secretOffset), into: message, at: 50)
    if made {
      transcript.mixInitiation(
        prefix: piece(written, 0, 18), token: piece(token, 0, TokenV2.secretOffset),
        deviceSecret: piece(token, TokenV2.secretOffset, 32), ephemeral: piece(written, 18, 32))
    }
    let sealed =
      made
      && Self.sealRequest(
        request, resumeID: resumeID, resumeKey: resumeKey, transcript: &transcript,
        into: piece(message, 269, 184))
    if sealed {
      transcript.mixHash(piece(written, 269, 184))
      // mac2: zeros without a cookie (or if it could not be made).
      let mac2 = piece(message, InitMessage.mac2Offset, 16)
      crypto.wipe(mac2)  // zeros
      if !cookie.isEmpty,
        !crypto.derive(
          into: mac2, key: cookie, input: piece(written, 0, InitMessage.mac2Offset),
          label: "tether2 mac2")
      {
        crypto.wipe(mac2)  // zeros
      }
      next.hash = transcript.h
      next.chainingKey = transcript.ck
      next.isOpen = true
      // The new attempt becomes the current one, the current one the previous; the
      // previous one is wiped, and so is `next`, a copy, below.
      previous.wipe(crypto)
      previous = current
      current = next
    }
    transcript.wipe()
    next.wipe(crypto)
    return sealed
  }

  /// `AEAD(k_req, 0^12, ad = h1, Q)` (step 6) into `out` (184 bytes), the transcript
  /// standing at `h1`. `Q` is copied to the stack (wiped there) and its resume fields (flag,
  /// session id, proof) written from `resumeKey` alone.
  @inline(never)
  private static func sealRequest(
    _ request: UnsafeRawBufferPointer, resumeID: UInt64, resumeKey: UnsafeRawBufferPointer,
    transcript: inout HandshakeTranscript<Crypto>, into out: UnsafeMutableRawBufferPointer
  ) -> Bool {
    let crypto = transcript.crypto
    var stack = InlineBytes()
    return stack.withUnsafeMutableBytes { stack in
      defer { crypto.wipe(stack) }
      let plaintext = piece(stack, 0, HandshakeRequest.size)
      guard copy(request, into: plaintext, at: 0) else { return false }
      let resumes = !resumeKey.isEmpty
      plaintext[0] &= ~HandshakeRequest.resumeFlag
      if resumes { plaintext[0] |= HandshakeRequest.resumeFlag }
      putBigEndian(resumes ? resumeID : 0, width: 8, into: plaintext, at: 140)
      // The proof (148 ..< 164): zeros without a resume, or if it could not be made.
      let proof = piece(plaintext, 148, 16)
      crypto.wipe(proof)  // zeros
      if resumes,
        !transcript.withKeys({ hash, _ in
          crypto.derive(into: proof, key: resumeKey, input: hash, label: "tether2 proof")
        })
      {
        crypto.wipe(proof)  // zeros
      }
      return transcript.withKeys { hash, key in
        crypto.sealOnce(
          into: out, key: key, label: "tether2 req", ad: hash,
          plaintext: UnsafeRawBufferPointer(plaintext))
      }
    }
  }

  /// Takes a datagram from the edge: a RESPONSE, COOKIE_REPLY, REFUSE_CLEAR or
  /// REFUSE_SEALED for one of the open attempts, writing what it carries into `out` (at
  /// least 201 bytes: the CONFIRM, or the cookie) and, for a RESPONSE, the session's keys
  /// into `keys` (the caller wipes them). A RESPONSE or a refusal ends both attempts; a
  /// COOKIE_REPLY leaves them open.
  /// - Throws: a ``HandshakeError``, having changed nothing of the attempts, for anything
  ///   else (`out` and `keys` then hold nothing meaningful).
  public mutating func receive(
    _ datagram: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
    keys: inout SessionKeys<Crypto>.Derived
  ) throws(HandshakeError) -> Answer {
    // All four echo N_d at bytes 1 ..< 17, so one lookup serves them.
    let kind = datagram.first ?? 0
    guard datagram.count == Self.size(ofAnswer: kind), out.count >= ConfirmMessage.size else {
      throw .malformed
    }
    let echoed = piece(datagram, 1, 16)
    // The attempt read where it is held (a copy of it would be a copy of its secret on
    // the stack, unwiped).
    let isCurrent = current.echoes(echoed)
    guard isCurrent || previous.echoes(echoed) else { throw .unknownAttempt }
    // One COOKIE_REPLY per attempt: a second (a replay; the edge answers an INIT once) would
    // make the device send one more INIT for nothing.
    if kind == SealedAnswer.cookieReplyKind, isCurrent ? current.cookieTaken : previous.cookieTaken
    {
      throw .unknownAttempt
    }
    var transcript =
      isCurrent
      ? HandshakeTranscript(crypto: crypto, hash: current.hash, chainingKey: current.chainingKey)
      : HandshakeTranscript(crypto: crypto, hash: previous.hash, chainingKey: previous.chainingKey)
    defer { transcript.wipe() }
    let answer: Answer
    switch kind {
    case ResponseMessage.kind:
      // No edge issues session id 0 (§12.8): the layer reads 0 as "no session", and every
      // rejoin would then name a resume the edge refuses. Refused before any work.
      guard bigEndian(datagram, at: 17, width: 8) != 0 else { throw .malformed }
      // The ephemeral secret passed where it is held (inout: read in place, no copy).
      if isCurrent {
        try Self.complete(
          datagram, secret: &current.drawn.secret, &transcript, into: out, keys: &keys)
      } else {
        try Self.complete(
          datagram, secret: &previous.drawn.secret, &transcript, into: out, keys: &keys)
      }
      answer = .established(
        sessionID: bigEndian(datagram, at: 17, width: 8),
        ticketLifetimeMs: UInt32(truncatingIfNeeded: bigEndian(datagram, at: 41, width: 4)))
    case RefuseClearMessage.kind:
      guard datagram[17] == RefuseClearMessage.tokenNotOpened else { throw .malformed }
      answer = .refused(.tokenNotOpened)
    default:
      answer = try Self.open(datagram, &transcript, into: out)
    }
    if case .cookie = answer {
      if isCurrent { current.cookieTaken = true } else { previous.cookieTaken = true }
    } else {
      end()
    }
    return answer
  }

  /// The size of an answer of `kind` the device takes (0 for any other kind).
  private static func size(ofAnswer kind: UInt8) -> Int {
    switch kind {
    case ResponseMessage.kind: return ResponseMessage.size
    case RefuseClearMessage.kind: return RefuseClearMessage.size
    default: return SealedAnswer.size(of: kind)
    }
  }

  /// Ends both attempts, wiping their secrets.
  public mutating func end() {
    current.wipe(crypto)
    previous.wipe(crypto)
  }

  /// Steps 7 to 11 on a RESPONSE (§12.5's layout: header 0 ..< 45, `e_e` 45 ..< 77, ticket
  /// 77 ..< 253, tag 253 ..< 269), from the attempt's transcript and ephemeral secret; then
  /// the session's keys into `keys` and the CONFIRM into `out`.
  @inline(never)
  private static func complete(
    _ response: UnsafeRawBufferPointer, secret: inout KeyBytes,
    _ transcript: inout HandshakeTranscript<Crypto>, into out: UnsafeMutableRawBufferPointer,
    keys: inout SessionKeys<Crypto>.Derived
  ) throws(HandshakeError) {
    let crypto = transcript.crypto
    var shared = KeyBytes()
    var sessionSecret = KeyBytes()
    defer {
      shared.withUnsafeMutableBytes { crypto.wipe($0) }
      sessionSecret.withUnsafeMutableBytes { crypto.wipe($0) }
    }
    let ephemeral = piece(response, 45, 32)
    let agreed = shared.withUnsafeMutableBytes { out in
      secret.withBytesInPlace { crypto.x25519(into: out, secret: $0, publicKey: ephemeral) }
    }
    guard agreed else { throw .badKey }
    let derived = sessionSecret.withUnsafeMutableBytes { out in
      shared.withBytesInPlace {
        transcript.mixResponseKeys(
          header: piece(response, 0, 45), ephemeral: ephemeral, sharedSecret: $0, into: out)
      }
    }
    var tag: (UInt64, UInt64) = (0, 0)
    let tagged = withUnsafeMutableBytes(of: &tag) {
      transcript.mixTicket(piece(response, 77, 176), tag: $0)
    }
    guard derived, tagged else { throw .badKey }
    guard withUnsafeBytes(of: tag, { crypto.constantTimeEqual($0, piece(response, 253, 16)) })
    else { throw .unopened }
    guard sessionSecret.withBytesInPlace({ keys.derive(from: $0, crypto: crypto) }) else {
      throw .badKey
    }
    // CONFIRM: kind, session id, ticket (the RESPONSE's bytes 17 ..< 25 and 77 ..< 253),
    // then the tag over them.
    let confirm = piece(out, 0, ConfirmMessage.size)
    guard confirm.count == ConfirmMessage.size else { throw .malformed }
    confirm[0] = ConfirmMessage.kind
    let sealed =
      copy(piece(response, 17, 8), into: confirm, at: 1)
      && copy(piece(response, 77, 176), into: confirm, at: 9)
      && sessionSecret.withBytesInPlace {
        crypto.sealOnce(
          into: piece(confirm, 185, 16), key: $0, label: "tether2 confirm",
          ad: UnsafeRawBufferPointer(piece(confirm, 0, 185)),
          plaintext: UnsafeRawBufferPointer(start: nil, count: 0))
      }
    guard sealed else { throw .badKey }
  }

  /// A COOKIE_REPLY or REFUSE_SEALED (kind, `N_d` 1 ..< 17, nonce 17 ..< 41, then the sealed
  /// bytes), opened under the attempt's `k_cookie` or `k_refuse`: the cookie into `out`.
  @inline(never)
  private static func open(
    _ answer: UnsafeRawBufferPointer, _ transcript: inout HandshakeTranscript<Crypto>,
    into out: UnsafeMutableRawBufferPointer
  ) throws(HandshakeError) -> Answer {
    let crypto = transcript.crypto
    let isCookie = answer.first == SealedAnswer.cookieReplyKind
    var key = KeyBytes()
    defer { key.withUnsafeMutableBytes { crypto.wipe($0) } }
    let sealed = piece(answer, 41, answer.count - 41)
    var plaintext = KeyBytes()  // a cookie (16 bytes) or a reason and a detail (2)
    defer { plaintext.withUnsafeMutableBytes { crypto.wipe($0) } }
    let opened = plaintext.withUnsafeMutableBytes { plaintext in
      key.withUnsafeMutableBytes { key in
        transcript.key(isCookie ? "tether2 cookiek" : "tether2 refuse", into: key)
          && crypto.xaeadOpen(
            into: piece(plaintext, 0, sealed.count - 16), key: UnsafeRawBufferPointer(key),
            nonce: piece(answer, 17, 24), ad: piece(answer, 0, 17), sealed: sealed)
          && (!isCookie || copy(piece(UnsafeRawBufferPointer(plaintext), 0, 16), into: out, at: 0))
      }
    }
    guard opened else { throw .unopened }
    if isCookie { return .cookie }
    // Reason and detail (§12.6): a reason of a channel (1 … 6) or a login (2 … 7), a detail
    // 0 … 2; anything else was sealed by no edge that follows §12 and changes nothing.
    let (reason, detail) = plaintext.withBytesInPlace { ($0[0], $0[1]) }
    guard sealed.count == 18, reason >= 1, reason <= 7, detail <= 2 else { throw .malformed }
    return .refused(.sealed(reason: reason, detail: detail))
  }
}

// MARK: - Arrays, for the edge's tests and tools

extension DeviceHandshake {
  /// ``initiate(into:token:request:resumeID:resumeKey:cookie:)`` of a parsed token and a
  /// request value, returning the INIT.
  public mutating func initiate(
    token: TokenV2, request: HandshakeRequest, resume: Resume? = nil, cookie: [UInt8]? = nil
  ) throws(HandshakeError) -> InitMessage {
    var bytes = [UInt8](repeating: 0, count: InitMessage.size)
    let encoded = request.encoded()
    let key = resume?.key ?? []  // a resume's key is 32 bytes; an empty one resumes nothing
    let result: HandshakeError? = bytes.withUnsafeMutableBytes { out in
      token.stored.withUnsafeBytes { stored in
        encoded.withUnsafeBytes { request in
          key.withUnsafeBytes { key in
            (cookie ?? []).withUnsafeBytes { cookie in
              do throws(HandshakeError) {
                try initiate(
                  into: out, token: piece(stored, 0, TokenV2.secretOffset + 32),
                  request: request, resumeID: resume?.sessionID ?? 0, resumeKey: key,
                  cookie: cookie)
                return nil
              } catch { return error }
            }
          }
        }
      }
    }
    if let result { throw result }
    return InitMessage(checked: bytes)
  }

  /// ``receive(_:into:keys:)`` of an array, returning what the answer carries as values.
  public mutating func receive(_ datagram: ArraySlice<UInt8>) throws(HandshakeError) -> Outcome {
    var out = [UInt8](repeating: 0, count: ConfirmMessage.size)
    var keys = SessionKeys<Crypto>.Derived()
    let crypto = crypto
    defer { keys.wipe(crypto) }
    var answer = Answer.cookie
    let result: HandshakeError? = out.withUnsafeMutableBytes { out in
      datagram.withUnsafeBytes { datagram in
        do throws(HandshakeError) {
          answer = try receive(datagram, into: out, keys: &keys)
          return nil
        } catch { return error }
      }
    }
    if let result { throw result }
    switch answer {
    case .established(let sessionID, let lifetime):
      return .established(
        Established(
          confirm: ConfirmMessage(checked: out),
          keys: try SessionKeys(keys, sessionID: sessionID, crypto: crypto),
          ticketLifetimeMs: lifetime))
    case .cookie:
      return .cookie(Array(out[0..<16]))
    case .refused(let refusal):
      return .refused(refusal)
    }
  }
}

/// Copies `source` into `bytes` from `offset` (which the caller keeps within `bytes`).
/// One out-of-line loop for every field the handshake writes in place.
@inline(never)
func put(_ source: ArraySlice<UInt8>, into bytes: inout [UInt8], at offset: Int) {
  var i = offset
  for byte in source {
    bytes[i] = byte
    i += 1
  }
}
