// SPDX-License-Identifier: Apache-2.0
@_spi(Link) import TetherCore
import TetherEdge

// fuzz-decode: protocol version 2's decoders (docs/PROTOCOL.md §12) on any bytes, both
// sides, the input's first byte choosing which (its low 3 bits; bit 7 patches the attempt's
// nonce or the session's id in), the rest the bytes:
//   0, 1  a server payload as the device decodes it after a DATA opens (channel, login):
//         the rest is the payload of DATA under the keys of a live session's layer
//         (SecureLink on the null seam), and what the layer hands the session is re-encoded;
//   2     a handshake answer (RESPONSE, COOKIE_REPLY, REFUSE_CLEAR, REFUSE_SEALED) as the
//         device's handshake takes it, for an attempt it has open;
//   3     a RESET as the device's live layer takes it;
//   4     an INIT as the edge opens it (its request too), 5 a request alone,
//   6     a CONFIRM, 7 a device's payload (the edge's DevicePayload).
// Properties: nothing traps; every fixed-layout datagram that decodes re-encodes to the same
// bytes from its fields; a payload the device hands on is exactly the edge's encoding of what
// it got (decode, encode, compare), a device payload the edge decodes is exactly §12.7's; an
// answer the handshake takes decodes as its kind and carries what it gave, and one it refuses
// leaves its attempt open; and, the null AEAD making a zero tag open, every answer that
// authenticates is taken and every RESET of the session's id and value is.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let input = Array(UnsafeRawBufferPointer(start: start, count: count))
  guard let selector = input.first else { return 0 }
  var bytes = Array(input.dropFirst())
  let patch = selector & 0x80 != 0
  switch selector & 7 {
  case 0: Decoding.devicePayload(bytes, live: Decoding.channel)
  case 1: Decoding.devicePayload(bytes, live: Decoding.login)
  case 2:
    if patch, bytes.count >= 17 { bytes.replaceSubrange(1..<17, with: Decoding.attempt.nonce) }
    Decoding.answer(bytes)
  case 3:
    if patch, bytes.count >= 9 { bytes.replaceSubrange(1..<9, with: sessionIDBytes()) }
    if selector & 0x40 != 0, bytes.count >= 25 {
      bytes.replaceSubrange(9..<25, with: NullEdge.resetValue)
    }
    Decoding.reset(bytes)
  case 4: Decoding.initiation(bytes)
  case 5: Decoding.request(bytes)
  case 6: Decoding.confirm(bytes)
  default: Decoding.edgePayload(bytes)
  }
  return 0
}

private func sessionIDBytes() -> [UInt8] {
  var bytes: [UInt8] = []
  bytes.appendBigEndian(Decoding.channelSessionID)
  return bytes
}

enum Decoding {
  static let crypto = NullSeam(random: NullRandom(seed: 0x5EED))
  static let now = Instant(nanoseconds: 1_000_000_000)
  static let channelSessionID: UInt64 = 0x0102_0304_0000_0001
  static let loginSessionID: UInt64 = 0x0102_0304_0000_0002

  /// A channel session CONNECTED behind its layer, on keys of ``channelSessionID``: each
  /// input gets a copy.
  nonisolated(unsafe) static var channel: LinkedSubject<ChannelSession<SeededRandom>> = {
    let config = ChannelConfig(appID: Samples.appID)
    var subject = LinkedSubject(
      session: try! ChannelSession(config: config, random: SeededRandom(seed: 1)), crypto: crypto)
    subject.call(at: now) { s, now, out in
      try! s.join(token: NullEdge.token(), channel: Samples.channel, uid: 0, now: now, into: &out)
    }
    guard
      subject.answer(sessionID: channelSessionID, accept: NullEdge.accept(login: false), at: now)
    else { fatalError("the channel session's handshake did not complete") }
    return subject
  }()

  /// A login session LOGGED_IN behind its layer, on keys of ``loginSessionID``.
  nonisolated(unsafe) static var login: LinkedSubject<LoginSession<SeededRandom>> = {
    let config = LoginConfig(appID: Samples.appID)
    var subject = LinkedSubject(
      session: try! LoginSession(config: config, random: SeededRandom(seed: 2)), crypto: crypto)
    subject.call(at: now) { s, now, out in
      try! s.login(token: NullEdge.token(), userID: Samples.user, now: now, into: &out)
    }
    guard subject.answer(sessionID: loginSessionID, accept: NullEdge.accept(login: true), at: now)
    else { fatalError("the login session's handshake did not complete") }
    return subject
  }()

  /// The device's handshake with one attempt open, and that attempt's INIT.
  nonisolated(unsafe) static var attempt:
    (handshake: DeviceHandshake<NullSeam>, initiation: [UInt8], nonce: [UInt8]) = {
      var handshake = DeviceHandshake(crypto: crypto)
      let token = try! TokenV2(text: NullEdge.tokenText()[...], crypto: crypto)
      let request = HandshakeRequest(
        appID: Samples.appID.bytes, kind: HandshakeRequest.channelKind,
        name: Samples.channel.bytes)
      let initiation = try! handshake.initiate(token: token, request: request).bytes
      return (handshake, initiation, Array(initiation[2..<18]))
    }()

  // MARK: - The device's side

  /// `payload` in DATA under a live session's keys (counter 1: the ACCEPT took 0): what the
  /// layer hands the session is the edge's encoding of it, byte for byte.
  static func devicePayload<S: LinkSession>(_ payload: [UInt8], live: LinkedSubject<S>) {
    var subject = live
    let datagram = NullEdge.data(sessionID: live.link.sessionID, counter: 1, payload: payload)
    var recorded = RecordedSession(inner: subject.session)
    var output = SessionOutput<S.Notification>()
    subject.link.receive(datagram[...], session: &recorded, now: now, into: &output)
    guard let message = recorded.handed else {
      // Nothing for the session: a payload that does not decode, one the layer keeps (a
      // PATH_CHALLENGE, answered), or a refusal under the keys of a session already
      // accepted. A PATH_CHALLENGE is answered with its 8 bytes, at once.
      if payload.first == 0x8D, payload.count == 9 {
        let answers = output.datagrams
        require(answers.count == 1, "a PATH_CHALLENGE answered with \(answers.count) datagrams")
        let answer = NullEdge.payload(ofData: answers[0]).map { Array($0) }
        require(answer == [0x09] + payload[1...], "a PATH_CHALLENGE answered with \(answers[0])")
      }
      return
    }
    let reset = payload.count >= 16 ? Array(payload.suffix(16)) : []
    let encoded = NullEdge.payload(message, resetValue: reset)
    require(encoded == payload, "the device decoded \(payload) as \(message), encoded \(encoded)")
  }

  /// A handshake answer to the open attempt.
  static func answer(_ bytes: [UInt8]) {
    var handshake = attempt.handshake
    let outcome: DeviceHandshake<NullSeam>.Outcome?
    do throws(HandshakeError) {
      outcome = try handshake.receive(bytes[...])
    } catch {
      outcome = nil
    }
    let response = try? ResponseMessage(decoding: bytes[...])
    let sealed = try? SealedAnswer(decoding: bytes[...])
    let clear = try? RefuseClearMessage(decoding: bytes[...])
    roundTrips(response, sealed, clear, bytes)
    let echoes = bytes.count >= 17 && Array(bytes[1..<17]) == attempt.nonce
    let tagZero = bytes.count >= 16 && bytes.suffix(16).allSatisfy { $0 == 0 }
    guard let outcome else {
      require(handshake.openAttempts == 1, "a refused answer closed the attempt: \(bytes)")
      // What authenticates under the null AEAD is taken: the attempt's nonce and a zero tag.
      if echoes, tagZero {
        require(
          response.map { $0.ephemeral != attempt.initiation[18..<50] } != true,
          "a RESPONSE that authenticates was refused")
        if let sealed {
          // A cookie is taken once per attempt (each input's attempt has taken none); a
          // refusal when its reason and detail are ones §12.6 defines.
          let reason = sealed.sealed.first ?? 0
          let detail = sealed.sealed.dropFirst().first ?? 0
          let defined = (1...7).contains(reason) && detail <= 2
          require(
            sealed.kind != SealedAnswer.cookieReplyKind && !defined,
            "a sealed answer that authenticates was refused: \(bytes)")
        }
      }
      require(!(echoes && clear != nil), "a REFUSE_CLEAR of the attempt was refused")
      return
    }
    require(echoes, "an answer that does not echo the attempt's nonce was taken: \(bytes)")
    switch outcome {
    case .established(let established):
      require(response != nil && tagZero, "established by \(bytes)")
      let confirm = established.confirm
      require(
        (try? ConfirmMessage(decoding: confirm.bytes[...])) == confirm
          && confirm.sessionID == response?.sessionID && confirm.ticket == response?.ticket,
        "the CONFIRM does not carry the RESPONSE's session and ticket")
      require(handshake.openAttempts == 0, "a RESPONSE taken left an attempt open")
    case .cookie(let cookie):
      require(
        sealed?.kind == SealedAnswer.cookieReplyKind && tagZero
          && cookie == Array(sealed?.sealed.prefix(16) ?? []),
        "a cookie \(cookie) from \(bytes)")
      require(handshake.openAttempts == 1, "a COOKIE_REPLY closed the attempt")
    case .refused(.tokenNotOpened):
      require(clear != nil, "REFUSE_CLEAR taken from \(bytes)")
      require(handshake.openAttempts == 0, "a refusal left an attempt open")
    case .refused(.sealed(let reason, let detail)):
      require(
        sealed?.kind == SealedAnswer.refusalKind && tagZero
          && sealed?.sealed.prefix(2).elementsEqual([reason, detail]) == true,
        "refused \(reason)/\(detail) by \(bytes)")
      require(handshake.openAttempts == 0, "a refusal left an attempt open")
    }
  }

  /// A RESET to the live channel session: the session gets SESSION_UNKNOWN exactly when it
  /// carries the session's id and reset value.
  static func reset(_ bytes: [UInt8]) {
    let decoded = try? ResetMessage(decoding: bytes[...])
    if let decoded {
      let again = try? ResetMessage(sessionID: decoded.sessionID, resetValue: decoded.resetValue)
      require(again == decoded, "RESET re-encoded to \(String(describing: again))")
    }
    var subject = channel
    var recorded = RecordedSession(inner: subject.session)
    var output = ChannelOutput()
    subject.link.receive(bytes[...], session: &recorded, now: now, into: &output)
    let genuine =
      decoded?.sessionID == channelSessionID
      && decoded?.resetValue.elementsEqual(
        NullEdge.resetValue) == true
    if genuine {
      if case .sessionUnknown? = recorded.handed {
      } else {
        fatalError("property violated: the session's own RESET was not taken")
      }
    } else {
      require(recorded.handed == nil, "\(bytes) reached the session as \(recorded.handed!)")
    }
  }

  /// Each fixed-layout answer that decodes, made again from its fields, is the same bytes.
  private static func roundTrips(
    _ response: ResponseMessage?, _ sealed: SealedAnswer?, _ clear: RefuseClearMessage?,
    _ bytes: [UInt8]
  ) {
    if let r = response {
      let again = try? ResponseMessage(
        deviceNonce: r.deviceNonce, sessionID: r.sessionID, edgeNonce: r.edgeNonce,
        ticketLifetimeMs: r.ticketLifetimeMs, ephemeral: r.ephemeral, ticket: r.ticket,
        tag: r.tag)
      require(again == r, "RESPONSE \(bytes) re-encoded otherwise")
    }
    if let s = sealed {
      let again = try? SealedAnswer(
        kind: s.kind, deviceNonce: s.deviceNonce, nonce: s.nonce[...], sealed: s.sealed)
      require(again == s, "sealed answer \(bytes) re-encoded otherwise")
    }
    if let c = clear {
      require(
        (try? RefuseClearMessage(deviceNonce: c.deviceNonce)) == c,
        "REFUSE_CLEAR \(bytes) re-encoded otherwise")
    }
  }

  // MARK: - The edge's side

  /// An INIT: it re-encodes from its fields; under the null AEAD its request opens exactly
  /// when the request's tag is zero and the request decodes, and re-encodes to its bytes.
  static func initiation(_ bytes: [UInt8]) {
    guard let message = try? InitMessage(decoding: bytes[...]) else { return }
    let again = try? InitMessage(
      deviceNonce: message.deviceNonce, ephemeral: message.ephemeral, token: message.token,
      sealedRequest: message.sealedRequest, mac2: message.mac2)
    require(again == message, "INIT re-encoded otherwise")
    let plaintext = message.sealedRequest.dropLast(16)
    let decodes =
      message.sealedRequest.suffix(16).allSatisfy { $0 == 0 }
      && (try? HandshakeRequest(decoding: plaintext)) != nil
    let edge = NullEdge.opening(bytes[...], crypto: crypto)
    require((edge != nil) == decodes, "the edge opened an INIT \(edge != nil), expected \(decodes)")
    if let edge {
      require(edge.request.encoded()[...] == plaintext, "the INIT's request re-encoded otherwise")
    }
  }

  /// `Q` alone: what decodes re-encodes to its bytes.
  static func request(_ bytes: [UInt8]) {
    guard let request = try? HandshakeRequest(decoding: bytes[...]) else { return }
    require(request.encoded() == bytes, "request \(bytes) re-encoded as \(request.encoded())")
  }

  static func confirm(_ bytes: [UInt8]) {
    guard let confirm = try? ConfirmMessage(decoding: bytes[...]) else { return }
    let again = try? ConfirmMessage(
      sessionID: confirm.sessionID, ticket: confirm.ticket, tag: confirm.tag)
    require(again == confirm, "CONFIRM re-encoded otherwise")
  }

  /// A device's payload as the edge decodes it: exactly §12.7's encoding of what it got.
  static func edgePayload(_ bytes: [UInt8]) {
    guard let payload = DevicePayload(decoding: bytes[...]) else { return }
    let encoded = encode(payload)
    require(encoded == bytes, "device payload \(bytes) decoded as \(payload), \(encoded)")
  }

  /// §12.7's device payloads, written from the table (the device's own encoder is
  /// SecureLink's, checked against the edge's decoder by fuzz-link).
  static func encode(_ payload: DevicePayload) -> [UInt8] {
    var out: [UInt8] = []
    switch payload {
    case .message(.heartbeat(let sequence)):
      out = [0x02]
      out.appendBigEndian(sequence)
      out += [0, 0, 0, 0]
    case .message(.leave): out = [0x03] + [UInt8](repeating: 0, count: 8)
    case .renewToken(let w): out = [0x04] + w
    case .message(.loginHeartbeat(let sequence, let session, let received)):
      out = [0x06]
      out.appendBigEndian(sequence)
      out.appendBigEndian(session)
      out.appendBigEndian(received)
    case .message(.logout): out = [0x07] + [UInt8](repeating: 0, count: 8)
    case .message(.channelOperation(let operation)):
      out = [0x08]
      out.appendBigEndian(operation.session)
      out.appendBigEndian(operation.sequence)
      out.append(operation.kind.rawValue)
      let name = operation.channel.bytes
      out.append(UInt8(name.count))
      out += name + [UInt8](repeating: 0, count: 63 - name.count)
    case .pathResponse(let challenge): out = [0x09] + challenge
    case .message(let other): fatalError("property violated: a device payload of \(other)")
    }
    return out
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeDecode(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(DecodeSeeds.all)
  return 0
}
