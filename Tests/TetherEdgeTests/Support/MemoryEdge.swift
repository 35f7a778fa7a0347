// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherEdge
import TetherSodium

/// A version 2 edge in memory for the device layer's tests (``SecureLink``): the token
/// opened with `TokenOpener`, the handshake's cryptographic half (`EdgeHandshake`), the
/// sessions' DATA (`SealedData`), reset values (`ResetValue`). Its policy is whatever a
/// test sets (a cookie first, a refusal); tickets are random bytes here, the session
/// secret kept beside them (the real edge seals it into the ticket).
struct MemoryEdge {
  typealias Crypto = SodiumCrypto
  let crypto = SodiumCrypto()
  let keys: CertificateKeys
  let edgeID = EdgeID("memory-edge")!
  var epoch: UInt32 = 0x0A0B_0C0D
  var serial: UInt32 = 0

  /// Answer the next INIT without a valid `mac2` with a COOKIE_REPLY.
  var cookieFirst = false
  let cookie: [UInt8]
  /// Refuse the next INIT with REFUSE_SEALED (reason, detail).
  var refuseInit: (UInt8, UInt8)?
  /// Refuse the next CONFIRM with a sealed REFUSE or LOGIN_REFUSE (payload type, reason).
  var refuseConfirm: (UInt8, UInt8)? {
    get { refuseConfirmPayload.map { ($0[0], $0[1]) } }
    set { refuseConfirmPayload = newValue.map { [$0.0, $0.1, 0] } }
  }
  /// The whole payload sealed in place of the next CONFIRM's ACCEPT (a refusal, or one
  /// that is not).
  var refuseConfirmPayload: [UInt8]?

  /// CONFIRMs to ignore before taking one (the device repeats its CONFIRM).
  var confirmsToIgnore = 0

  /// RESPONSEs sent: the secret and request of each session id.
  var responded: [UInt64: (secret: [UInt8], request: HandshakeRequest, resumed: Bool)] = [:]
  /// Sessions made.
  var sessions: [UInt64: Session] = [:]
  /// Every payload the edge opened, in order.
  var opened: [[UInt8]] = []

  struct Session {
    var data: SealedData<SodiumDatagramCipher>
    var resumeKey: [UInt8]
    let request: HandshakeRequest
  }

  init(certificate: String = "memory-edge-certificate") throws {
    #expect(SodiumCrypto.start())
    keys = try CertificateKeys(certificate: Array(certificate.utf8))
    cookie = SodiumCrypto().randomBytes(count: 16)
  }

  func token(channel: String, uid: UInt32, expiresAt: UInt64 = 0, app: String = "app") throws
    -> Token
  {
    let text = TokenMinter(crypto: crypto, keys: keys).mint(
      appID: try AppID(validating: Array(app.utf8)),
      grant: .channel(try ChannelName(validating: Array(channel.utf8)), uid: uid),
      expiresAt: expiresAt)
    return try Token(validating: Array(text.utf8))
  }

  func token(user: String, expiresAt: UInt64 = 0) throws -> Token {
    let text = TokenMinter(crypto: crypto, keys: keys).mint(
      appID: try AppID(validating: Array("app".utf8)),
      grant: .user(try UserID(validating: Array(user.utf8))), expiresAt: expiresAt)
    return try Token(validating: Array(text.utf8))
  }

  /// The edge's answers to one datagram from the device.
  mutating func handle(_ datagram: ArraySlice<UInt8>) throws -> [[UInt8]] {
    switch datagram.first {
    case InitMessage.kind: return try initiation(InitMessage(decoding: datagram))
    case ConfirmMessage.kind: return try confirmation(ConfirmMessage(decoding: datagram))
    case SealedData<SodiumDatagramCipher>.kind: return try data(datagram)
    default: return []
    }
  }

  private mutating func initiation(_ initiation: InitMessage) throws -> [[UInt8]] {
    let opener = TokenOpener(crypto: crypto, current: keys)
    guard let token = try? opener.open(initiation.token) else {
      return [try RefuseClearMessage(deviceNonce: initiation.deviceNonce).bytes]
    }
    var edge = try EdgeHandshake(
      opening: initiation, deviceSecret: token.deviceSecret, crypto: crypto)
    defer { edge.wipe() }
    if cookieFirst, !EdgeHandshake.mac2Holds(initiation, cookie: cookie, crypto: crypto) {
      return [try edge.cookieReply(cookie: cookie).bytes]
    }
    if let (reason, detail) = refuseInit {
      refuseInit = nil
      return [try edge.refusal(reason: reason, detail: detail).bytes]
    }
    var resumed = false
    if let held = sessions[edge.request.resumeSessionID],
      edge.resumeProofHolds(resumeKey: held.resumeKey)
    {
      resumed = true  // the session moves to the new id at the CONFIRM
    }
    serial += 1
    let id = UInt64(epoch) << 32 | UInt64(serial)
    let pending = try edge.respond(
      ephemeralSecret: crypto.randomBytes(count: 32), edgeNonce: crypto.randomBytes(count: 16),
      sessionID: id, ticketLifetimeMs: 3_000)
    responded[id] = (pending.sessionSecret, edge.request, resumed)
    return [try pending.finish(ticket: crypto.randomBytes(count: 176)[...]).bytes]
  }

  private mutating func confirmation(_ confirm: ConfirmMessage) throws -> [[UInt8]] {
    if confirmsToIgnore > 0 {
      confirmsToIgnore -= 1
      return []
    }
    guard let (secret, request, resumed) = responded[confirm.sessionID],
      EdgeHandshake.confirmHolds(confirm, sessionSecret: secret, crypto: crypto)
    else { return [] }
    let keys = try SessionKeys(sessionSecret: secret, sessionID: confirm.sessionID, crypto: crypto)
    var session = Session(data: keys.edgeData(), resumeKey: keys.resumeKey, request: request)
    if let payload = refuseConfirmPayload {
      refuseConfirmPayload = nil
      return [try Self.seal(&session.data, payload)]
    }
    let isLogin = request.kind == HandshakeRequest.loginKind
    let accept: Message =
      isLogin
      ? .loginAccept(
        LoginAccept(serverTimeMs: 5, tokenTimeLeftMs: 0, resumed: resumed, session: 1))
      : .accept(
        JoinAccept(
          uid: request.uid == 0 ? 77 : request.uid, serverTimeMs: 5, tokenTimeLeftMs: 600_000,
          resumed: resumed))
    let answer = try Self.seal(
      &session.data, Self.payload(accept) + resetValue(confirm.sessionID))
    if resumed { sessions[request.resumeSessionID] = nil }
    sessions[confirm.sessionID] = session
    return [answer]
  }

  func resetValue(_ id: UInt64) -> [UInt8] {
    let sessionID = SessionID(
      epoch: UInt32(truncatingIfNeeded: id >> 32), serial: UInt32(truncatingIfNeeded: id))
    return ResetValue.of(sessionID, edgeID: edgeID, keys: keys, crypto: crypto)
  }

  private mutating func data(_ datagram: ArraySlice<UInt8>) throws -> [[UInt8]] {
    var id: UInt64 = 0
    for byte in datagram.dropFirst().prefix(8) { id = id << 8 | UInt64(byte) }
    guard var session = sessions[id] else { return [] }
    var payload: [UInt8] = []
    guard (try? session.data.open(datagram, into: &payload)) != nil else { return [] }
    opened.append(payload)
    var answers: [[UInt8]] = []
    switch payload.first {
    case 0x02:  // HEARTBEAT: sequence, then 4 zero bytes
      let ack = Message.heartbeatAck(
        sequence: UInt32(payload[1]) << 24 | UInt32(payload[2]) << 16 | UInt32(payload[3]) << 8
          | UInt32(payload[4]), serverTimeMs: 9)
      answers.append(try Self.seal(&session.data, Self.payload(ack)))
    case 0x06:  // LOGIN_HEARTBEAT
      let ack = Message.heartbeatAck(
        sequence: UInt32(payload[1]) << 24 | UInt32(payload[2]) << 16 | UInt32(payload[3]) << 8
          | UInt32(payload[4]), serverTimeMs: 9)
      answers.append(try Self.seal(&session.data, Self.payload(ack)))
    case 0x04:  // RENEW_TOKEN: W, accepted if it opens
      let opens = (try? TokenOpener(crypto: crypto, current: keys).open(payload[1...])) != nil
      let renewed = Message.tokenRenewed(
        TokenRenewal(refused: opens ? nil : .invalidToken, tokenTimeLeftMs: 900_000))
      answers.append(try Self.seal(&session.data, Self.payload(renewed)))
    default:
      break
    }
    sessions[id] = session
    return answers
  }

  /// Seals `message` (its type byte and version 1 body, then `extra`) for session `id`.
  mutating func send(_ message: Message, to id: UInt64, extra: [UInt8] = []) throws -> [UInt8] {
    try sendPayload(Self.payload(message) + extra, to: id)
  }

  mutating func sendPayload(_ payload: [UInt8], to id: UInt64) throws -> [UInt8] {
    guard var session = sessions[id] else { throw HandshakeError.unknownAttempt }
    let sealed = try Self.seal(&session.data, payload)
    sessions[id] = session
    return sealed
  }

  /// Type byte and version 1 body of `message`.
  static func payload(_ message: Message) -> [UInt8] {
    let encoded = Packet(cookie: 0, message: message).encoded
    return [encoded[3]] + encoded[Packet.headerSize...]
  }

  static func seal(_ data: inout SealedData<SodiumDatagramCipher>, _ payload: [UInt8]) throws
    -> [UInt8]
  {
    var out: [UInt8] = []
    try data.seal(payload[...], into: &out)
    return out
  }
}
