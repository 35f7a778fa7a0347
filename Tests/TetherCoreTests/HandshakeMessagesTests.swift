// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherCore

/// The handshake's datagram layouts (docs/PROTOCOL.md §12.5, §12.6, §12.9) and the request
/// `Q`, decoded with §8's strictness: exact sizes, the kind, every byte with one valid
/// value; a decoded request re-encodes to the same bytes. No cryptography here.
struct HandshakeMessagesTests {
  static func filled(_ count: Int, _ seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
  }

  /// Every message's decoder takes exactly its size and kind, and nothing else.
  @Test func eachMessage_takesExactlyItsSizeAndKind() {
    let decoders: [(UInt8, Int, (ArraySlice<UInt8>) throws(HandshakeError) -> Void)] = [
      (0x01, 469, { b throws(HandshakeError) in _ = try InitMessage(decoding: b) }),
      (0x02, 269, { b throws(HandshakeError) in _ = try ResponseMessage(decoding: b) }),
      (0x03, 201, { b throws(HandshakeError) in _ = try ConfirmMessage(decoding: b) }),
      (0x04, 73, { b throws(HandshakeError) in _ = try SealedAnswer(decoding: b) }),
      (0x05, 18, { b throws(HandshakeError) in _ = try RefuseClearMessage(decoding: b) }),
      (0x06, 59, { b throws(HandshakeError) in _ = try SealedAnswer(decoding: b) }),
      (0x08, 25, { b throws(HandshakeError) in _ = try ResetMessage(decoding: b) }),
    ]
    for (kind, size, decode) in decoders {
      var valid = [UInt8](repeating: 0, count: size)
      valid[0] = kind
      if kind == 0x01 { valid[1] = 2 }
      if kind == 0x05 { valid[17] = 1 }
      #expect((try? decode(valid[...])) != nil, "kind \(kind)")
      for wrongSize in [0, 1, size - 1, size + 1, 1200] {
        var bytes = [UInt8](repeating: 0, count: wrongSize)
        if wrongSize > 0 { bytes[0] = kind }
        #expect(throws: HandshakeError.malformed) { try decode(bytes[...]) }
      }
      for other in [0x00, 0x07, 0x09, 0x54, 0xFF] + [1, 2, 3, 4, 5, 6, 8] where other != kind {
        var bytes = valid
        bytes[0] = UInt8(other)
        #expect(throws: HandshakeError.malformed, "kind \(other) as \(kind)") {
          try decode(bytes[...])
        }
      }
    }
  }

  @Test func anInit_ofAnotherVersion_andAClearRefusal_ofAnotherReason_areMalformed() {
    for version in [0, 1, 3, 0xFF] as [UInt8] {
      var bytes = [UInt8](repeating: 0, count: 469)
      bytes[0] = 1
      bytes[1] = version
      #expect(throws: HandshakeError.malformed) { try InitMessage(decoding: bytes[...]) }
    }
    for reason in [0, 2, 0xFF] as [UInt8] {
      var bytes = [UInt8](repeating: 0, count: 18)
      bytes[0] = 5
      bytes[17] = reason
      #expect(throws: HandshakeError.malformed) { try RefuseClearMessage(decoding: bytes[...]) }
    }
  }

  /// Built from fields, each message has the layout of §12: every field at its offset.
  @Test func messagesBuiltFromFields_haveTheLayoutOfTheSpec() throws {
    let nonce = Self.filled(16, 1)
    let initiation = try InitMessage(
      deviceNonce: nonce[...], ephemeral: Self.filled(32, 2)[...], token: Self.filled(219, 3)[...],
      sealedRequest: Self.filled(184, 4)[...], mac2: Self.filled(16, 5)[...])
    #expect(Array(initiation.bytes[0..<2]) == [1, 2])
    #expect(Array(initiation.bytes[2..<18]) == nonce)
    #expect(Array(initiation.bytes[50..<269]) == Self.filled(219, 3))
    #expect(Array(initiation.bytes[453...]) == Self.filled(16, 5))
    #expect(try InitMessage(decoding: initiation.bytes[...]) == initiation)

    let response = try ResponseMessage(
      deviceNonce: nonce[...], sessionID: 0x0102_0304_0506_0708, edgeNonce: Self.filled(16, 6)[...],
      ticketLifetimeMs: 0x0A0B_0C0D, ephemeral: Self.filled(32, 7)[...],
      ticket: Self.filled(176, 8)[...], tag: Self.filled(16, 9)[...])
    #expect(Array(response.bytes[17..<25]) == [1, 2, 3, 4, 5, 6, 7, 8])
    #expect(Array(response.bytes[41..<45]) == [0x0A, 0x0B, 0x0C, 0x0D])
    #expect(response.sessionID == 0x0102_0304_0506_0708 && response.ticketLifetimeMs == 0x0A0B_0C0D)
    #expect(Array(response.edgeNonce) == Self.filled(16, 6))
    #expect(
      Array(response.ticket) == Self.filled(176, 8) && Array(response.tag) == Self.filled(16, 9))
    #expect(response.header == response.bytes[0..<45])

    let confirm = try ConfirmMessage(
      sessionID: 42, ticket: Self.filled(176, 8)[...], tag: Self.filled(16, 1)[...])
    #expect(confirm.sessionID == 42 && confirm.head == confirm.bytes[0..<185])
    #expect(try ConfirmMessage(decoding: confirm.bytes[...]) == confirm)

    let cookie = try SealedAnswer(
      kind: 4, deviceNonce: nonce[...], nonce: Self.filled(24, 2)[...],
      sealed: Self.filled(32, 3)[...])
    #expect(cookie.bytes.count == 73 && cookie.nonce == Self.filled(24, 2))
    #expect(cookie.associatedData == [4] + nonce[...])
    #expect(throws: HandshakeError.malformed) {
      try SealedAnswer(
        kind: 6, deviceNonce: nonce[...], nonce: Self.filled(24, 2)[...],
        sealed: Self.filled(32, 3)[...])
    }
    let reset = try ResetMessage(sessionID: 7, resetValue: Self.filled(16, 4)[...])
    #expect(reset.bytes.count == 25 && reset.sessionID == 7)
    #expect(Array(reset.resetValue) == Self.filled(16, 4))
    #expect(throws: HandshakeError.malformed) {
      try ResetMessage(sessionID: 7, resetValue: Self.filled(15, 4)[...])
    }
  }

  // MARK: - The request

  static let channel = HandshakeRequest(
    flags: 1, uid: 7, appID: Array("app".utf8), kind: 1, name: Array("room".utf8))
  static let login = HandshakeRequest(
    flags: 2, versions: [3, 2], appID: [UInt8](repeating: 0x61, count: 64), kind: 2,
    name: [UInt8](repeating: 0x75, count: 64), resumeSessionID: 9,
    resumeProof: filled(16, 3))

  @Test(arguments: [channel, login])
  func aRequest_is168Bytes_andDecodesToItself(_ request: HandshakeRequest) throws {
    let bytes = request.encoded()
    #expect(bytes.count == 168)
    #expect(try HandshakeRequest(decoding: bytes[...]) == request)
  }

  @Test func theRequestsFields_areAtTheirOffsets() {
    let bytes = Self.channel.encoded()
    #expect(bytes[0] == 1 && Array(bytes[1..<5]) == [2, 0, 0, 0])
    #expect(Array(bytes[5..<9]) == [0, 0, 0, 7] && bytes[9] == 3)
    #expect(Array(bytes[10..<13]) == Array("app".utf8) && bytes[74] == 1 && bytes[75] == 4)
    #expect(Array(bytes[76..<80]) == Array("room".utf8))
    #expect(bytes[80...].allSatisfy { $0 == 0 })
  }

  /// Every byte of a valid request set to other values: either refused, or decoded to a
  /// request that re-encodes to exactly those bytes (one encoding per request).
  @Test(arguments: [channel, login])
  func everyByteChange_isRefusedOrReencodesToItself(_ request: HandshakeRequest) {
    let valid = request.encoded()
    var accepted = 0
    for offset in valid.indices {
      for value in [0x00, 0x01, 0x02, 0x03, 0x3F, 0x40, 0x41, 0x80, 0xFF] as [UInt8] {
        var bytes = valid
        bytes[offset] = value
        if let decoded = try? HandshakeRequest(decoding: bytes[...]) {
          #expect(decoded.encoded() == bytes, "offset \(offset) value \(value)")
          accepted += 1
        }
      }
    }
    #expect(accepted > 0)
  }

  /// Each strictness rule of `Q`, alone.
  @Test func eachRuleOfTheRequest_refusesWhatBreaksIt() {
    func breaks(_ change: (inout [UInt8]) -> Void, from request: HandshakeRequest = Self.channel)
      -> Bool
    {
      var bytes = request.encoded()
      change(&bytes)
      return (try? HandshakeRequest(decoding: bytes[...])) == nil
    }
    #expect(breaks { $0[0] = 0x04 })  // an undefined flag
    #expect(breaks { $0[1] = 0 })  // no version
    #expect(breaks { $0[1...2] = [2, 3] })  // not highest first
    #expect(breaks { $0[1...2] = [2, 2] })  // repeated
    #expect(breaks { $0[1...3] = [2, 0, 1] })  // a version after the end
    #expect(breaks { $0[9] = 0 })  // an empty app id
    #expect(breaks { $0[9] = 65 })  // longer than its room
    #expect(breaks { $0[20] = 1 })  // a byte past the app id
    #expect(breaks { $0[74] = 0 })  // a kind that is neither
    #expect(breaks { $0[74] = 3 })
    #expect(breaks { $0[75] = 64 })  // a 64-byte channel name (a user id may be)
    #expect(!breaks({ $0[75] = 64 }, from: Self.login))
    #expect(breaks({ $0[75] = 65 }, from: Self.login))
    #expect(breaks { $0[100] = 1 })  // a byte past the name
    #expect(breaks({ $0[8] = 1 }, from: Self.login))  // a uid in a login
    #expect(breaks { $0[0] = 3 })  // resume flag without a session
    #expect(breaks { $0[147] = 1 })  // a session without the resume flag
    #expect(breaks { $0[150] = 1 })  // a proof without a resume
    #expect(breaks { $0[167] = 1 })  // reserved
    #expect(breaks { $0.removeLast() })
    #expect(breaks { $0.append(0) })
  }
}
