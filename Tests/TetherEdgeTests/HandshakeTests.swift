// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

/// The version 2 handshake (docs/PROTOCOL.md §12.5, §12.6) between TetherCore's device and
/// edge halves, in memory, on libsodium: both profiles end to end, then every way an
/// answer can be wrong. The device's rule throughout: an answer that is not genuine, for
/// one of its two open attempts, throws and changes nothing, so the genuine one still
/// completes afterwards.
struct HandshakeTests {
  typealias Device = DeviceHandshake<SodiumCrypto>
  typealias Edge = EdgeHandshake<SodiumCrypto>
  let crypto = SodiumCrypto()

  init() { #expect(SodiumCrypto.start()) }

  /// A token of the vectors and the request it grants: 0 a channel, 3 a login.
  func join(_ index: Int) throws -> (TokenV2, HandshakeRequest) {
    let vector = TokenV2Vector.all[index]
    let token = try TokenV2(text: Array(vector.text.utf8)[...], crypto: crypto)
    let request = HandshakeRequest(
      uid: vector.uid, appID: Array(vector.appID.utf8), kind: vector.kind,
      name: Array(vector.name.utf8))
    return (token, request)
  }

  /// The edge's RESPONSE to `initiation`, with fresh ephemeral key, nonce and ticket.
  func respond(
    to initiation: InitMessage, secret: [UInt8], sessionID: UInt64 = 0x0102_0304_0000_0009
  ) throws -> (ResponseMessage, sessionSecret: [UInt8]) {
    let edge = try Edge(opening: initiation, deviceSecret: secret, crypto: crypto)
    let pending = try edge.respond(
      ephemeralSecret: crypto.randomBytes(count: 32), edgeNonce: crypto.randomBytes(count: 16),
      sessionID: sessionID, ticketLifetimeMs: 10_000)
    let secret = pending.sessionSecret
    return (try pending.finish(ticket: crypto.randomBytes(count: 176)[...]), secret)
  }

  func established<C: SessionCrypto>(_ outcome: DeviceHandshake<C>.Outcome) throws
    -> DeviceHandshake<C>.Established
  {
    guard case .established(let established) = outcome else {
      Issue.record("expected the handshake to complete, got \(outcome)")
      throw HandshakeError.malformed
    }
    return established
  }

  // MARK: - End to end

  @Test(arguments: [0, 3])
  func initResponseConfirmAndData_bothWays(tokenIndex: Int) throws {
    let (token, request) = try join(tokenIndex)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    #expect(initiation.bytes.count == 469 && device.openAttempts == 1)

    let edge = try Edge(opening: initiation, deviceSecret: token.deviceSecret, crypto: crypto)
    #expect(edge.request == request)
    #expect(!Edge.mac2Holds(initiation, cookie: crypto.randomBytes(count: 16), crypto: crypto))
    let pending = try edge.respond(
      ephemeralSecret: crypto.randomBytes(count: 32), edgeNonce: crypto.randomBytes(count: 16),
      sessionID: 0xABCD_0001_0000_0002, ticketLifetimeMs: 4_000)
    let sessionSecret = pending.sessionSecret
    let response = try pending.finish(ticket: crypto.randomBytes(count: 176)[...])
    #expect(response.bytes.count == 269 && response.deviceNonce == initiation.deviceNonce)

    let done = try established(device.receive(response.bytes[...]))
    #expect(device.openAttempts == 0)
    #expect(done.confirm.bytes.count == 201 && done.ticketLifetimeMs == 4_000)
    #expect(
      done.confirm.ticket == response.ticket && done.confirm.sessionID == 0xABCD_0001_0000_0002)
    #expect(Edge.confirmHolds(done.confirm, sessionSecret: sessionSecret, crypto: crypto))

    let edgeKeys = try SessionKeys(
      sessionSecret: sessionSecret, sessionID: done.keys.sessionID, crypto: crypto)
    #expect(edgeKeys.resumeKey == done.keys.resumeKey)
    var deviceData = done.keys.deviceData()
    var edgeData = edgeKeys.edgeData()
    for n in 0..<5 {
      let payload = [0x02] + [UInt8](repeating: UInt8(n), count: 8)
      var datagram: [UInt8] = []
      try deviceData.seal(payload[...], into: &datagram)
      var opened: [UInt8] = []
      try edgeData.open(datagram[...], into: &opened)
      #expect(opened == payload)
      var back: [UInt8] = []
      try edgeData.seal(([0x83] + payload)[...], into: &back)
      opened = []
      try deviceData.open(back[...], into: &opened)
      #expect(opened == [0x83] + payload)
      // A datagram never opens as its sender's: each direction has its own key (a fresh
      // window, so the counter alone does not refuse it).
      #expect(throws: SealedData<SodiumDatagramCipher>.Refusal.unopened) {
        var reflected = done.keys.deviceData()
        var out: [UInt8] = []
        try reflected.open(datagram[...], into: &out)
      }
    }
  }

  // MARK: - Every bit of every answer

  /// Calls `body` with `bytes` flipped at each bit in turn (bit 0 is byte 0's lowest).
  static func forEachBitFlip(of bytes: [UInt8], _ body: (Int, ArraySlice<UInt8>) -> Void) {
    var flipped = bytes
    for bit in 0..<(bytes.count * 8) {
      flipped[bit / 8] ^= 1 << UInt8(bit % 8)
      body(bit, flipped[...])
      flipped[bit / 8] ^= 1 << UInt8(bit % 8)
    }
  }

  /// Every bit of the RESPONSE flipped: refused (malformed, another attempt, or a tag that
  /// does not hold), and nothing changed: the genuine RESPONSE completes afterwards.
  @Test func everyBitFlip_ofTheResponse_isRefused_andChangesNothing() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let (response, _) = try respond(to: initiation, secret: token.deviceSecret)
    Self.forEachBitFlip(of: response.bytes) { bit, flipped in
      #expect(throws: HandshakeError.self, "bit \(bit)") { try device.receive(flipped) }
    }
    #expect(device.openAttempts == 1)
    _ = try established(device.receive(response.bytes[...]))
  }

  /// Every bit of a COOKIE_REPLY and of a REFUSE_SEALED flipped: refused, nothing changed;
  /// the genuine ones then give the cookie, and the refusal (which ends the attempts).
  @Test func everyBitFlip_ofTheSealedAnswers_isRefused_andChangesNothing() throws {
    let (token, request) = try join(3)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let edge = try Edge(opening: initiation, deviceSecret: token.deviceSecret, crypto: crypto)
    let cookie = crypto.randomBytes(count: 16)
    let cookieReply = try edge.cookieReply(cookie: cookie)
    let refusal = try edge.refusal(reason: 5, detail: 0)
    #expect(cookieReply.bytes.count == 73 && refusal.bytes.count == 59)
    for answer in [cookieReply, refusal] {
      Self.forEachBitFlip(of: answer.bytes) { bit, flipped in
        #expect(throws: HandshakeError.self, "bit \(bit)") { try device.receive(flipped) }
      }
    }
    #expect(device.openAttempts == 1)
    guard case .cookie(let received) = try device.receive(cookieReply.bytes[...]) else {
      Issue.record("the genuine COOKIE_REPLY did not give its cookie")
      return
    }
    #expect(received == cookie && device.openAttempts == 1)
    // The same COOKIE_REPLY again (a replay; the edge answers an INIT once): refused, so
    // the device sends no INIT for it.
    #expect(throws: HandshakeError.unknownAttempt) { try device.receive(cookieReply.bytes[...]) }
    #expect(device.openAttempts == 1)
    guard case .refused(let why) = try device.receive(refusal.bytes[...]) else {
      Issue.record("the genuine REFUSE_SEALED was not a refusal")
      return
    }
    #expect(why == .sealed(reason: 5, detail: 0) && device.openAttempts == 0)
  }

  /// Every bit of the CONFIRM flipped: its tag no longer holds (or it is not a CONFIRM).
  @Test func everyBitFlip_ofTheConfirm_isRefused() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let (response, sessionSecret) = try respond(to: initiation, secret: token.deviceSecret)
    let confirm = try established(device.receive(response.bytes[...])).confirm
    Self.forEachBitFlip(of: confirm.bytes) { bit, flipped in
      let holds =
        (try? ConfirmMessage(decoding: flipped)).map {
          Edge.confirmHolds($0, sessionSecret: sessionSecret, crypto: crypto)
        } ?? false
      #expect(!holds, "bit \(bit)")
    }
    #expect(Edge.confirmHolds(confirm, sessionSecret: sessionSecret, crypto: crypto))
    var otherSecret = sessionSecret
    otherSecret[0] ^= 1
    #expect(!Edge.confirmHolds(confirm, sessionSecret: otherSecret, crypto: crypto))
  }

  // MARK: - Attempts

  /// A RESPONSE to the previous attempt completes (the answer was on its way when the
  /// device retried); one to the attempt before that answers nothing the device holds.
  @Test func aResponseForThePreviousAttempt_completes_andOlderOnesDoNot() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let first = try device.initiate(token: token, request: request)
    let second = try device.initiate(token: token, request: request)
    _ = try device.initiate(token: token, request: request)
    #expect(device.openAttempts == 2)
    let (tooOld, _) = try respond(to: first, secret: token.deviceSecret)
    #expect(throws: HandshakeError.unknownAttempt) { try device.receive(tooOld.bytes[...]) }
    let (previous, _) = try respond(to: second, secret: token.deviceSecret)
    _ = try established(device.receive(previous.bytes[...]))
  }

  /// Every attempt draws a new N_d and a new e_d: none repeats across retries.
  @Test func attempts_neverShareTheNonceOrTheEphemeralKey() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    var nonces = Set<[UInt8]>()
    var keys = Set<[UInt8]>()
    for _ in 0..<64 {
      let initiation = try device.initiate(token: token, request: request)
      nonces.insert(Array(initiation.deviceNonce))
      keys.insert(Array(initiation.ephemeral))
    }
    #expect(nonces.count == 64 && keys.count == 64)
  }

  /// Found by fuzz-link: a RESPONSE naming session id 0 (which no edge issues, §12.8) was
  /// taken, and every later rejoin named a resume of session 0, which the edge refuses.
  /// It is refused as malformed and changes nothing: a genuine RESPONSE then completes.
  @Test func aResponseOfSessionIDZero_isRefused_andChangesNothing() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let (zero, _) = try respond(to: initiation, secret: token.deviceSecret, sessionID: 0)
    #expect(throws: HandshakeError.malformed) { try device.receive(zero.bytes[...]) }
    #expect(device.openAttempts == 1)
    let (response, _) = try respond(to: initiation, secret: token.deviceSecret)
    _ = try established(device.receive(response.bytes[...]))
  }

  /// After the handshake completed, the same RESPONSE again (or a refusal for the same
  /// attempt) answers nothing: the attempts ended with it.
  @Test func aReplayedResponse_afterCompletion_changesNothing() throws {
    let (token, request) = try join(3)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let (response, _) = try respond(to: initiation, secret: token.deviceSecret)
    _ = try established(device.receive(response.bytes[...]))
    #expect(throws: HandshakeError.unknownAttempt) { try device.receive(response.bytes[...]) }
    let refusal = try RefuseClearMessage(deviceNonce: initiation.deviceNonce)
    #expect(throws: HandshakeError.unknownAttempt) { try device.receive(refusal.bytes[...]) }
    #expect(device.openAttempts == 0)
  }

  // MARK: - Secrets

  /// Another device secret (a forged token with a genuine W) fails at `k_req` on the edge,
  /// and a device with another secret than the edge used fails at `k_resp`.
  @Test func anotherDeviceSecret_failsAtTheRequestAndAtTheResponse() throws {
    let (token, request) = try join(0)
    var otherSecret = token.deviceSecret
    otherSecret[31] ^= 0x80
    var device = DeviceHandshake(crypto: SeededCrypto(seed: 0x42))
    let initiation = try device.initiate(token: token, request: request)
    #expect(throws: HandshakeError.unopened) {
      try Edge(opening: initiation, deviceSecret: otherSecret, crypto: crypto)
    }
    // The same attempt (the same stream) by a device whose token has the other secret: the
    // edge answers it with the genuine secret, and the device's k_resp differs.
    let forged = try TokenV2ParseTests.withSecret(otherSecret, of: token, crypto: crypto)
    var impostor = DeviceHandshake(crypto: SeededCrypto(seed: 0x42))
    let same = try impostor.initiate(token: forged, request: request)
    #expect(same.deviceNonce == initiation.deviceNonce && same.ephemeral == initiation.ephemeral)
    let (response, _) = try respond(to: initiation, secret: token.deviceSecret)
    #expect(throws: HandshakeError.unopened) { try impostor.receive(response.bytes[...]) }
    _ = try established(device.receive(response.bytes[...]))
  }

  /// A resume proof holds under the named session's `k_resume` only.
  @Test func theResumeProof_holdsUnderTheSessionsResumeKeyOnly() throws {
    let (token, request) = try join(3)
    let resumeKey = crypto.randomBytes(count: 32)
    var device = Device(crypto: crypto)
    let resuming = try device.initiate(
      token: token, request: request, resume: .init(sessionID: 77, key: resumeKey))
    let edge = try Edge(opening: resuming, deviceSecret: token.deviceSecret, crypto: crypto)
    #expect(edge.request.resumeSessionID == 77)
    #expect(edge.request.flags & HandshakeRequest.resumeFlag != 0)
    #expect(edge.resumeProofHolds(resumeKey: resumeKey))
    #expect(!edge.resumeProofHolds(resumeKey: crypto.randomBytes(count: 32)))
    // Without a resume, the resume fields are cleared (even if the caller set them) and
    // nothing holds.
    var flagged = request
    flagged.flags = HandshakeRequest.resumeFlag | HandshakeRequest.rejoinFlag
    flagged.resumeSessionID = 5
    flagged.resumeProof = [UInt8](repeating: 1, count: 16)
    let plain = try Edge(
      opening: device.initiate(token: token, request: flagged), deviceSecret: token.deviceSecret,
      crypto: crypto)
    #expect(plain.request.flags == HandshakeRequest.rejoinFlag)
    #expect(plain.request.resumeSessionID == 0 && plain.request.resumeProof.allSatisfy { $0 == 0 })
    #expect(!plain.resumeProofHolds(resumeKey: resumeKey))
  }

  /// The cookie of a COOKIE_REPLY makes the next INIT's `mac2`, which holds under that
  /// cookie only; an INIT without a cookie carries zeros.
  @Test func aCookie_makesTheNextInitsMac2() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let first = try device.initiate(token: token, request: request)
    #expect(first.mac2.allSatisfy { $0 == 0 })
    let cookie = crypto.randomBytes(count: 16)
    let reply = try Edge(opening: first, deviceSecret: token.deviceSecret, crypto: crypto)
      .cookieReply(cookie: cookie)
    guard case .cookie(let received) = try device.receive(reply.bytes[...]) else {
      Issue.record("no cookie")
      return
    }
    let second = try device.initiate(token: token, request: request, cookie: received)
    #expect(Edge.mac2Holds(second, cookie: cookie, crypto: crypto))
    #expect(!Edge.mac2Holds(second, cookie: crypto.randomBytes(count: 16), crypto: crypto))
    var altered = second.bytes
    altered[300] ^= 1
    #expect(
      !Edge.mac2Holds(try InitMessage(decoding: altered[...]), cookie: cookie, crypto: crypto))
  }

  // MARK: - Refusals and keys

  /// REFUSE_CLEAR for an attempt ends the join as an invalid token; for no attempt, nothing.
  @Test func aClearRefusal_forAnAttempt_endsIt_andForNoneChangesNothing() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let stranger = try RefuseClearMessage(deviceNonce: crypto.randomBytes(count: 16)[...])
    #expect(throws: HandshakeError.unknownAttempt) { try device.receive(stranger.bytes[...]) }
    #expect(device.openAttempts == 1)
    let genuine = try RefuseClearMessage(deviceNonce: initiation.deviceNonce)
    guard case .refused(.tokenNotOpened) = try device.receive(genuine.bytes[...]) else {
      Issue.record("REFUSE_CLEAR was not taken")
      return
    }
    #expect(device.openAttempts == 0)
  }

  /// A sealed refusal is drawn with a fresh random nonce each time (a replayed INIT may be
  /// refused again); both open for the attempt; a reason or detail out of range is refused.
  @Test func sealedRefusals_drawFreshNonces_andOutOfRangeReasonsAreRefused() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let edge = try Edge(opening: initiation, deviceSecret: token.deviceSecret, crypto: crypto)
    let one = try edge.refusal(reason: 6, detail: 1)
    let two = try edge.refusal(reason: 6, detail: 1)
    #expect(one.nonce != two.nonce && one.sealed != two.sealed)
    for (reason, detail) in [(0, 0), (8, 0), (1, 3)] as [(UInt8, UInt8)] {
      let bad = try edge.refusal(reason: reason, detail: detail)
      #expect(throws: HandshakeError.malformed) { try device.receive(bad.bytes[...]) }
    }
    guard case .refused(.sealed(6, 1)) = try device.receive(two.bytes[...]) else {
      Issue.record("the sealed refusal was not taken")
      return
    }
  }

  /// A low-order ephemeral key (an all-zero shared secret) is refused on both sides.
  @Test func aLowOrderEphemeralKey_isRefused() throws {
    let (token, request) = try join(0)
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: request)
    let (response, _) = try respond(to: initiation, secret: token.deviceSecret)
    var bytes = response.bytes
    bytes.replaceSubrange(45..<77, with: [UInt8](repeating: 0, count: 32))
    #expect(throws: HandshakeError.badKey) { try device.receive(bytes[...]) }
    _ = try established(device.receive(response.bytes[...]))

    // A device whose e_d is a low-order point (a seam that gives it as the public key): its
    // INIT opens at the edge (the request does not depend on the DH) but gets no RESPONSE.
    var lowOrderCrypto = SeededCrypto(seed: 7)
    lowOrderCrypto.publicKeyOverride = [UInt8](repeating: 0, count: 32)
    var lowOrder = DeviceHandshake(crypto: lowOrderCrypto)
    let lowInit = try lowOrder.initiate(token: token, request: request)
    let edge = try Edge(opening: lowInit, deviceSecret: token.deviceSecret, crypto: crypto)
    #expect(throws: HandshakeError.badKey) {
      try edge.respond(
        ephemeralSecret: crypto.randomBytes(count: 32), edgeNonce: crypto.randomBytes(count: 16),
        sessionID: 1, ticketLifetimeMs: 1)
    }
  }

  /// A request that opens but breaks its layout (a kind that is neither) is malformed.
  @Test func aRequestThatOpensButBreaksItsLayout_isMalformed() throws {
    let (token, request) = try join(0)
    var bad = request
    bad.kind = 3
    var device = Device(crypto: crypto)
    let initiation = try device.initiate(token: token, request: bad)
    #expect(throws: HandshakeError.malformed) {
      try Edge(opening: initiation, deviceSecret: token.deviceSecret, crypto: crypto)
    }
  }
}
