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

    /// Whether `nonce` (16 bytes) is this attempt's `N_d`.
    func echoes(_ nonce: ArraySlice<UInt8>) -> Bool {
      isOpen
        && nonce.withUnsafeBytes {
          $0.count == 16 && $0.loadUnaligned(as: UInt64.self) == drawn.nonce.0
            && $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == drawn.nonce.1
        }
    }

    /// Its secrets wiped through `crypto`, then closed.
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
  /// `crypto` (one draw of 48), seals `request` under `k_req` (with `resume`'s session,
  /// proof and flag, if given; without it, none) and adds `mac2` under `cookie`, if one is
  /// held. The attempt before the previous one ends.
  /// - Throws: ``HandshakeError/badKey`` if the seam refused a key (never with libsodium).
  public mutating func initiate(
    token: TokenV2, request: HandshakeRequest, resume: Resume? = nil, cookie: [UInt8]? = nil
  ) throws(HandshakeError) -> InitMessage {
    // One draw: N_d, then the ephemeral secret (the order the vectors draw them in), into
    // the new attempt; the public key straight into the INIT.
    var next = Attempt()
    defer { next.wipe(crypto) }
    let crypto = crypto
    withUnsafeMutableBytes(of: &next.drawn) { crypto.randomBytes(into: $0) }
    var bytes = [UInt8](repeating: 0, count: InitMessage.size)
    let made = bytes.withUnsafeMutableBytes { out in
      out[0] = InitMessage.kind
      out[1] = InitMessage.version
      withUnsafeBytes(of: next.drawn.nonce) {
        UnsafeMutableRawBufferPointer(rebasing: out[2..<18]).copyMemory(from: $0)
      }
      return next.drawn.secret.withUnsafeBytes {
        crypto.x25519PublicKey(
          into: UnsafeMutableRawBufferPointer(rebasing: out[18..<50]), secret: $0)
      }
    }
    guard made else { throw .badKey }
    put(token.sent[...], into: &bytes, at: 50)
    var transcript = HandshakeTranscript(crypto: crypto)
    transcript.mixInitiation(
      prefix: bytes[0..<18], token: token.sent[...], deviceSecret: token.deviceSecret,
      ephemeral: bytes[18..<50])
    let sealed = sealRequest(request, resume: resume, transcript: transcript)
    guard sealed.count == 184 else {
      transcript.wipe()
      throw .badKey
    }
    put(sealed[...], into: &bytes, at: 269)
    transcript.mixHash(sealed[...])
    if let cookie {
      let mac2 = crypto.derive(
        key: cookie, input: bytes[0..<453], label: "tether2 mac2", length: 16)
      put(mac2[...], into: &bytes, at: 453)
    }
    next.hash = transcript.h
    next.chainingKey = transcript.ck
    next.isOpen = true
    transcript.wipe()
    // The new attempt becomes the current one, the current one the previous; the previous
    // one is wiped, and so is `next`, a copy, when this returns.
    previous.wipe(crypto)
    previous = current
    current = next
    return InitMessage(checked: bytes)
  }

  /// `AEAD(k_req, 0^12, ad = h1, Q)` (step 6), the transcript standing at `h1`. The resume
  /// fields (flag, session id, proof) come from `resume` alone, whatever `request` held,
  /// and are written into the encoded request, not into a copy of it.
  private func sealRequest(
    _ request: HandshakeRequest, resume: Resume?, transcript: HandshakeTranscript<Crypto>
  ) -> [UInt8] {
    var plaintext = request.encoded()
    defer { crypto.wipe(&plaintext) }
    plaintext[0] &= ~HandshakeRequest.resumeFlag
    // Session id (140 ..< 148) and proof (148 ..< 164), written in place: zeros without a
    // resume (or if the proof could not be made), whatever the request held.
    putBigEndian(resume?.sessionID ?? 0, width: 8, into: &plaintext, at: 140)
    let crypto = crypto
    let proven = plaintext.withUnsafeMutableBytes { out in
      guard let resume else { return false }
      return resume.key.withUnsafeBytes { key in
        transcript.withKeys { hash, _ in
          crypto.derive(
            into: UnsafeMutableRawBufferPointer(rebasing: out[148..<164]), key: key, input: hash,
            label: "tether2 proof")
        }
      }
    }
    if resume != nil { plaintext[0] |= HandshakeRequest.resumeFlag }
    if !proven { for i in 148..<164 { plaintext[i] = 0 } }
    return transcript.withKeys { hash, key in
      plaintext.withUnsafeBytes {
        crypto.sealOnce(key: key, label: "tether2 req", ad: hash, plaintext: $0)
      }
    }
  }

  /// Takes a datagram from the edge: a RESPONSE, COOKIE_REPLY, REFUSE_CLEAR or
  /// REFUSE_SEALED for one of the open attempts. A RESPONSE or a refusal ends both
  /// attempts; a COOKIE_REPLY leaves them open.
  /// - Throws: a ``HandshakeError``, having changed nothing, for anything else.
  public mutating func receive(_ datagram: ArraySlice<UInt8>) throws(HandshakeError) -> Outcome {
    // One copy, then every answer is read in place through its codec's accessors. All four
    // echo N_d at bytes 1 ..< 17, so one lookup serves them.
    let bytes = Array(datagram)
    let kind = bytes.first ?? 0
    guard bytes.count == Self.size(ofAnswer: kind) else { throw .malformed }
    let echoed = bytes[1..<17]
    guard current.echoes(echoed) || previous.echoes(echoed) else { throw .unknownAttempt }
    let attempt = current.echoes(echoed) ? current : previous
    var transcript = HandshakeTranscript(
      crypto: crypto, hash: attempt.hash, chainingKey: attempt.chainingKey)
    defer { transcript.wipe() }
    let outcome: Outcome
    switch kind {
    case ResponseMessage.kind:
      outcome = .established(
        try complete(ResponseMessage(checked: bytes), secret: attempt.drawn.secret, &transcript))
    case RefuseClearMessage.kind:
      guard bytes[17] == RefuseClearMessage.tokenNotOpened else { throw .malformed }
      outcome = .refused(.tokenNotOpened)
    default:
      outcome = try open(SealedAnswer(checked: bytes), transcript)
    }
    if case .cookie = outcome {} else { end() }
    return outcome
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

  /// Steps 7 to 11 on a RESPONSE, from the attempt's transcript and ephemeral secret, then
  /// the CONFIRM and the session's keys.
  private func complete(
    _ response: ResponseMessage, secret: KeyBytes,
    _ transcript: inout HandshakeTranscript<Crypto>
  ) throws(HandshakeError) -> Established {
    var shared = [UInt8](repeating: 0, count: KeyBytes.count)
    let crypto = crypto
    let agreed = shared.withUnsafeMutableBytes { out in
      secret.withUnsafeBytes { secret in
        response.ephemeral.withUnsafeBytes {
          crypto.x25519(into: out, secret: secret, publicKey: $0)
        }
      }
    }
    guard agreed else {
      crypto.wipe(&shared)
      throw .badKey
    }
    var sessionSecret = transcript.mixResponseKeys(
      header: response.header, ephemeral: response.ephemeral, sharedSecret: &shared)
    defer { crypto.wipe(&sessionSecret) }
    let tag = transcript.mixTicket(response.ticket)
    guard crypto.constantTimeEqual(tag[...], response.tag) else { throw .unopened }
    let keys = try SessionKeys(
      sessionSecret: sessionSecret, sessionID: response.sessionID, crypto: crypto)
    // CONFIRM: kind, session id, ticket (the RESPONSE's bytes 17 ..< 25 and 77 ..< 253),
    // then the tag over them.
    var confirm = [UInt8](repeating: ConfirmMessage.kind, count: ConfirmMessage.size)
    put(response.bytes[17..<25], into: &confirm, at: 1)
    put(response.ticket, into: &confirm, at: 9)
    let confirmTag = SessionKeys.confirmTag(
      head: confirm[0..<185], sessionSecret: sessionSecret, crypto: crypto)
    guard confirmTag.count == 16 else { throw .badKey }
    put(confirmTag[...], into: &confirm, at: 185)
    return Established(
      confirm: ConfirmMessage(checked: confirm), keys: keys,
      ticketLifetimeMs: response.ticketLifetimeMs)
  }

  /// A COOKIE_REPLY or REFUSE_SEALED, opened under the attempt's `k_cookie` or `k_refuse`.
  private func open(_ answer: SealedAnswer, _ transcript: HandshakeTranscript<Crypto>)
    throws(HandshakeError) -> Outcome
  {
    let isCookie = answer.kind == SealedAnswer.cookieReplyKind
    var key = transcript.key(isCookie ? "tether2 cookiek" : "tether2 refuse")
    defer { crypto.wipe(&key) }
    guard
      let plaintext = crypto.xaeadOpen(
        key: key, nonce: answer.nonce, ad: answer.associatedData, sealed: answer.sealed)
    else { throw .unopened }
    if isCookie { return .cookie(plaintext) }
    // Reason and detail (§12.6): a reason of a channel (1 … 6) or a login (2 … 7), a detail
    // 0 … 2; anything else was sealed by no edge that follows §12 and changes nothing.
    guard plaintext.count == 2, plaintext[0] >= 1, plaintext[0] <= 7, plaintext[1] <= 2 else {
      throw .malformed
    }
    return .refused(.sealed(reason: plaintext[0], detail: plaintext[1]))
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
