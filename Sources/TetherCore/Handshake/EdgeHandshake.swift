// SPDX-License-Identifier: Apache-2.0
/// The edge's cryptographic half of the version 2 handshake (docs/PROTOCOL.md §12.5,
/// §12.6) for one INIT: it opens the request, and writes the answers (RESPONSE,
/// COOKIE_REPLY, REFUSE_SEALED) under the keys of that INIT's transcript. Stateless policy
/// (which answer, tickets, cookies, rate buckets, consumed ids) is the edge server's; this
/// type takes what it decided as input. `W` is opened by the edge with `K_token`, which
/// gives the device secret this type needs.
public struct EdgeHandshake<Crypto: SessionCrypto> {
  public let crypto: Crypto
  public let initiation: InitMessage
  /// `Q`, opened under `k_req` and decoded.
  public let request: HandshakeRequest
  /// `h1`: what a resume proof is made over.
  private let requestHash: [UInt8]
  /// At `h2` and `ck_e` (steps 1 to 6 done).
  private var transcript: HandshakeTranscript<Crypto>

  /// Runs steps 1 to 6 on `initiation` with the device secret from its token, and opens
  /// the request.
  /// - Throws: ``HandshakeError/unopened`` if the request does not open under `k_req` (the
  ///   INIT was altered, or made with another device secret: drop it);
  ///   ``HandshakeError/malformed`` if it opens but breaks the request's layout.
  public init(opening initiation: InitMessage, deviceSecret: [UInt8], crypto: Crypto)
    throws(HandshakeError)
  {
    var transcript = HandshakeTranscript(crypto: crypto)
    transcript.mixInitiation(
      prefix: initiation.bytes[0..<18], token: initiation.token, deviceSecret: deviceSecret,
      ephemeral: initiation.ephemeral)
    guard
      var plaintext = crypto.openOnce(
        key: transcript.chainingKey, label: "tether2 req", ad: transcript.hash[...],
        sealed: initiation.sealedRequest)
    else {
      transcript.wipe()
      throw .unopened
    }
    defer { crypto.wipe(&plaintext) }
    do {
      request = try HandshakeRequest(decoding: plaintext[...])
    } catch {
      transcript.wipe()
      throw error
    }
    requestHash = transcript.hash
    transcript.mixHash(initiation.sealedRequest)
    self.crypto = crypto
    self.initiation = initiation
    self.transcript = transcript
  }

  /// Whether the request's resume proof is `PRF16(k_resume, h1, "tether2 proof")` under
  /// `resumeKey`, the named session's (compared in constant time). False without a resume.
  public func resumeProofHolds(resumeKey: [UInt8]) -> Bool {
    guard request.flags & HandshakeRequest.resumeFlag != 0 else { return false }
    var proof = crypto.derive(
      key: resumeKey, input: requestHash[...], label: "tether2 proof", length: 16)
    defer { crypto.wipe(&proof) }
    return crypto.constantTimeEqual(proof[...], request.resumeProof[...])
  }

  /// REFUSE_SEALED with `reason` and `detail`, under `k_refuse` with a random nonce.
  public func refusal(reason: UInt8, detail: UInt8) throws(HandshakeError) -> SealedAnswer {
    try answer(kind: SealedAnswer.refusalKind, label: "tether2 refuse", [reason, detail])
  }

  /// COOKIE_REPLY with `cookie` (16 bytes), under `k_cookie` with a random nonce.
  public func cookieReply(cookie: [UInt8]) throws(HandshakeError) -> SealedAnswer {
    try answer(kind: SealedAnswer.cookieReplyKind, label: "tether2 cookiek", cookie)
  }

  /// `XAEAD(key, nonce, ad = kind ‖ N_d, plaintext)`, the nonce drawn through the seam: a
  /// replayed INIT may draw the same answer again, and a counter cannot be kept statelessly.
  private func answer(kind: UInt8, label: StaticString, _ plaintext: [UInt8])
    throws(HandshakeError) -> SealedAnswer
  {
    let nonce = crypto.randomBytes(count: 24)
    var key = transcript.key(label)
    defer { crypto.wipe(&key) }
    var ad = [kind]
    ad.append(contentsOf: initiation.deviceNonce)
    let sealed = crypto.xaeadSeal(key: key, nonce: nonce, ad: ad[...], plaintext: plaintext[...])
    return try SealedAnswer(
      kind: kind, deviceNonce: initiation.deviceNonce, nonce: nonce[...], sealed: sealed[...])
  }

  /// Steps 7 to 9 for a RESPONSE with the edge's ephemeral secret `e_e` (32 bytes, the
  /// caller's to draw and wipe), nonce `N_e`, session id and ticket lifetime. The result
  /// holds `S`, which the edge seals into the ticket; ``PendingResponse/finish(ticket:)``
  /// then makes the RESPONSE.
  /// - Throws: ``HandshakeError/badKey`` if `e_d` is a low-order point or a size is wrong
  ///   (checked before the key exchange, so no shared secret is left behind).
  public func respond(
    ephemeralSecret: [UInt8], edgeNonce: [UInt8], sessionID: UInt64, ticketLifetimeMs: UInt32
  ) throws(HandshakeError) -> PendingResponse {
    var header = [ResponseMessage.kind]
    header.append(contentsOf: initiation.deviceNonce)
    header.appendBigEndian(sessionID, byteCount: 8)
    header.append(contentsOf: edgeNonce)
    header.appendBigEndian(UInt64(ticketLifetimeMs), byteCount: 4)
    guard header.count == 45, let ephemeral = crypto.x25519PublicKey(secret: ephemeralSecret),
      var shared = crypto.x25519(secret: ephemeralSecret, publicKey: initiation.ephemeral)
    else { throw .badKey }
    var transcript = transcript
    let sessionSecret = transcript.mixResponseKeys(
      header: header[...], ephemeral: ephemeral[...], sharedSecret: &shared)
    return PendingResponse(
      sessionSecret: sessionSecret, header: header, ephemeral: ephemeral, transcript: transcript)
  }

  /// A RESPONSE whose ticket is still to be sealed. It holds the chaining key until
  /// ``finish(ticket:)`` wipes it: finish it, or wipe it (``wipe()``) if no RESPONSE is sent.
  public struct PendingResponse {
    /// `S`: the edge seals it into the ticket, and wipes it when the ticket is made.
    public let sessionSecret: [UInt8]
    let header: [UInt8]
    let ephemeral: [UInt8]
    var transcript: HandshakeTranscript<Crypto>

    /// Steps 10 and 11: the RESPONSE carrying `ticket` (176 bytes), tagged under `k_resp`.
    /// - Throws: ``HandshakeError/malformed`` if the ticket is another size.
    public consuming func finish(ticket: ArraySlice<UInt8>) throws(HandshakeError)
      -> ResponseMessage
    {
      let tag = transcript.mixTicket(ticket)
      let b = header.startIndex
      return try ResponseMessage(
        deviceNonce: header[(b + 1)..<(b + 17)],
        sessionID: bigEndian(header[...], at: b + 17, width: 8),
        edgeNonce: header[(b + 25)..<(b + 41)],
        ticketLifetimeMs: UInt32(truncatingIfNeeded: bigEndian(header[...], at: b + 41, width: 4)),
        ephemeral: ephemeral[...], ticket: ticket, tag: tag[...])
    }

    /// Wipes the chaining key (the session secret is the caller's to wipe).
    public mutating func wipe() { transcript.wipe() }
  }

  /// Whether `confirm`'s tag holds under `k_confirm` of `sessionSecret` (the `S` its ticket
  /// opened to), compared in constant time.
  public static func confirmHolds(
    _ confirm: ConfirmMessage, sessionSecret: [UInt8], crypto: Crypto
  ) -> Bool {
    let tag = SessionKeys<Crypto>.confirmTag(
      head: confirm.head, sessionSecret: sessionSecret, crypto: crypto)
    return crypto.constantTimeEqual(tag[...], confirm.tag)
  }

  /// Whether `initiation`'s `mac2` is `PRF16(cookie, INIT[0 ..< 453], "tether2 mac2")`,
  /// compared in constant time. Checked before any public-key work (§12.6 under load).
  public static func mac2Holds(_ initiation: InitMessage, cookie: [UInt8], crypto: Crypto) -> Bool {
    let mac = crypto.derive(
      key: cookie, input: initiation.bytes[0..<InitMessage.mac2Offset], label: "tether2 mac2",
      length: 16)
    return crypto.constantTimeEqual(mac[...], initiation.mac2)
  }

  /// Wipes the chaining key this INIT's answers are derived from.
  public mutating func wipe() { transcript.wipe() }
}
