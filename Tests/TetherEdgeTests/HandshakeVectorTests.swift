// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

/// Protocol version 2's handshake (docs/PROTOCOL.md §12.5) and first DATA of each side
/// (§12.7), made by TetherCore's device and edge halves through libsodium, against the
/// bytes PyNaCl and hashlib computed alone (scripts/test/v2-vectors.py). Random bytes come
/// from the same seeded stream, drawn in the same order: the device's N_d then e_d, then
/// the edge's N_e then e_e.
struct HandshakeVectorTests {
  typealias Device = DeviceHandshake<SeededCrypto>
  typealias Edge = EdgeHandshake<SeededCrypto>

  static func bytes(_ hex: String) -> [UInt8] { CertificateKeyTests.bytes(hex) }
  static func hex(_ bytes: [UInt8]) -> String { CertificateKeyTests.hex(bytes) }

  /// The vector's request, resume and cookie, as the device's session will pass them.
  static func initiate(_ vector: HandshakeVector, device: inout Device, token: TokenV2) throws
    -> InitMessage
  {
    let request = HandshakeRequest(
      flags: vector.flags, uid: vector.uid, appID: Array(vector.appID.utf8), kind: vector.kind,
      name: Array(vector.channelOrUser.utf8))
    let resume =
      vector.resumeSessionID == 0
      ? nil : Device.Resume(sessionID: vector.resumeSessionID, key: bytes(vector.resumeKey))
    let cookie = vector.cookie.isEmpty ? nil : bytes(vector.cookie)
    return try device.initiate(token: token, request: request, resume: resume, cookie: cookie)
  }

  @Test(arguments: HandshakeVector.all)
  func initResponseConfirmAndFirstData_areThePyNaClBytes(_ vector: HandshakeVector) throws {
    let crypto = SeededCrypto(seed: vector.seed)
    let token = try TokenV2(text: Array(vector.token.utf8)[...], crypto: crypto)
    var device = Device(crypto: crypto)
    let initiation = try Self.initiate(vector, device: &device, token: token)
    #expect(Self.hex(initiation.bytes) == vector.initiation)

    let edge = try Edge(
      opening: InitMessage(decoding: initiation.bytes[...]), deviceSecret: token.deviceSecret,
      crypto: crypto)
    #expect(edge.request.appID == Array(vector.appID.utf8))
    #expect(edge.request.name == Array(vector.channelOrUser.utf8))
    #expect(edge.request.kind == vector.kind && edge.request.uid == vector.uid)
    #expect(edge.request.flags & 1 == vector.flags)
    #expect(edge.request.resumeSessionID == vector.resumeSessionID)
    if vector.resumeSessionID != 0 {
      #expect(edge.resumeProofHolds(resumeKey: Self.bytes(vector.resumeKey)))
    }
    if !vector.cookie.isEmpty {
      #expect(Edge.mac2Holds(initiation, cookie: Self.bytes(vector.cookie), crypto: crypto))
    }

    let edgeNonce = crypto.randomBytes(count: 16)
    let ephemeral = crypto.randomBytes(count: 32)
    let pending = try edge.respond(
      ephemeralSecret: ephemeral, edgeNonce: edgeNonce, sessionID: vector.sessionID,
      ticketLifetimeMs: vector.ticketLifetimeMs)
    #expect(Self.hex(pending.sessionSecret) == vector.sessionSecret)
    let sessionSecret = pending.sessionSecret
    let response = try pending.finish(ticket: Self.bytes(vector.ticket)[...])
    #expect(Self.hex(response.bytes) == vector.response)

    guard case .established(let established) = try device.receive(response.bytes[...]) else {
      Issue.record("the RESPONSE did not complete the handshake")
      return
    }
    #expect(Self.hex(established.confirm.bytes) == vector.confirm)
    #expect(established.ticketLifetimeMs == vector.ticketLifetimeMs)
    #expect(Edge.confirmHolds(established.confirm, sessionSecret: sessionSecret, crypto: crypto))
    #expect(Self.hex(established.keys.resumeKey) == vector.resumeKeyOfSession)

    try Self.expectFirstData(vector, device: established.keys, sessionSecret: sessionSecret)
  }

  /// The device's first heartbeat and the edge's ACCEPT, each the vector's bytes, each
  /// opened by the other side; the raw data keys seal the same bytes.
  static func expectFirstData(
    _ vector: HandshakeVector, device keys: SessionKeys<SeededCrypto>, sessionSecret: [UInt8]
  ) throws {
    var device = keys.deviceData()
    let edgeKeys = try SessionKeys(
      sessionSecret: sessionSecret, sessionID: vector.sessionID, crypto: SeededCrypto(seed: 0))
    var edge = edgeKeys.edgeData()
    var heartbeat: [UInt8] = []
    try device.seal(bytes(vector.heartbeatPayload)[...], into: &heartbeat)
    #expect(hex(heartbeat) == vector.firstHeartbeat)
    var accept: [UInt8] = []
    try edge.seal(bytes(vector.acceptPayload)[...], into: &accept)
    #expect(hex(accept) == vector.firstAccept)

    var opened: [UInt8] = []
    try edge.open(heartbeat[...], into: &opened)
    #expect(hex(opened) == vector.heartbeatPayload)
    opened = []
    try device.open(accept[...], into: &opened)
    #expect(hex(opened) == vector.acceptPayload)

    for (key, datagram) in [
      (vector.deviceToEdgeKey, vector.firstHeartbeat), (vector.edgeToDeviceKey, vector.firstAccept),
    ] {
      let cipher = try #require(SodiumDatagramCipher(key: bytes(key)))
      var resealed = Array(bytes(datagram)[0..<17])
      let sealedPart = bytes(datagram)[17...]
      var plain: [UInt8] = []
      #expect(cipher.open(counter: 0, ad: resealed[...], sealed: sealedPart, into: &plain))
      #expect(cipher.seal(counter: 0, plaintext: plain[...], appendingTo: &resealed, adStart: 0))
      #expect(hex(resealed) == datagram)
    }
  }
}

extension HandshakeVector: CustomTestStringConvertible {
  var testDescription: String { name }
}
