// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// Tokens: `1:<expiry>:<hex HMAC-SHA256>` over app id, grant and expiry (Auth/TokenSigner.swift).
struct TokenSignerTests {
  static let signer = TokenSigner(appID: Fixture.appID, certificate: Array("cert-1".utf8))
  static let lobby = try! ChannelName(validating: Array("lobby".utf8))
  static let now: UInt64 = 1_700_000_000

  static func sign(uid: UInt32 = 7, channel: ChannelName = lobby, expiresAt: UInt64 = now + 60)
    -> [UInt8]
  {
    signer.sign(.channel(channel, uid: uid), expiresAt: expiresAt)
  }

  // MARK: - Sign and verify

  @Test func verify_returnsExpiry_forTheGrantItWasSignedFor() throws {
    let token = Self.sign()
    #expect(
      try Self.signer.verify(token, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
        == Self.now + 60)
  }

  @Test func sign_makesAShortPrintableToken_thatTheClientAccepts() throws {
    let token = Self.sign(uid: .max, expiresAt: .max)
    #expect(token.count <= 87)
    #expect(token.allSatisfy { (0x21...0x7E).contains($0) })
    _ = try Token(validating: token)
    #expect(String(decoding: token.prefix(2), as: UTF8.self) == "1:")
  }

  @Test func verify_isInvalid_whenAnyByteIsChanged() {
    let token = Self.sign()
    for index in token.indices {
      for replacement: UInt8 in [0x30, 0x31, 0x61, 0x41, 0x3A, 0x7E]
      where replacement != token[index] {
        var tampered = token
        tampered[index] = replacement
        #expect(throws: TokenError.invalid) {
          try Self.signer.verify(tampered, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
        }
      }
    }
  }

  @Test func verify_isInvalid_forAnotherChannelUidAppOrCertificate() throws {
    let token = Self.sign()
    let other = try ChannelName(validating: Array("lobby2".utf8))
    let otherApp = TokenSigner(
      appID: try AppID(validating: Array("app-2".utf8)), certificate: Array("cert-1".utf8))
    let otherCert = TokenSigner(appID: Fixture.appID, certificate: Array("cert-2".utf8))
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(token, for: .channel(other, uid: 7), wallClock: Self.now)
    }
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(token, for: .channel(Self.lobby, uid: 8), wallClock: Self.now)
    }
    #expect(throws: TokenError.invalid) {
      try otherApp.verify(token, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
    }
    #expect(throws: TokenError.invalid) {
      try otherCert.verify(token, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
    }
  }

  // MARK: - Expiry

  @Test func verify_isExpired_atAndAfterItsExpiry_andValidTheSecondBefore() throws {
    let token = Self.sign(expiresAt: Self.now)
    let grant = TokenGrant.channel(Self.lobby, uid: 7)
    #expect(throws: TokenError.expired) {
      try Self.signer.verify(token, for: grant, wallClock: Self.now)
    }
    #expect(throws: TokenError.expired) {
      try Self.signer.verify(token, for: grant, wallClock: Self.now + 1000)
    }
    #expect(try Self.signer.verify(token, for: grant, wallClock: Self.now - 1) == Self.now)
  }

  @Test func verify_expiryZero_neverExpires() throws {
    let token = Self.sign(expiresAt: 0)
    #expect(String(decoding: token.prefix(4), as: UTF8.self) == "1:0:")
    #expect(try Self.signer.verify(token, for: .channel(Self.lobby, uid: 7), wallClock: .max) == 0)
  }

  @Test func verify_badMACWins_overExpiry() {
    var token = Self.sign(expiresAt: 5)
    token[token.count - 1] = token[token.count - 1] == 0x30 ? 0x31 : 0x30
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(token, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
    }
  }

  // MARK: - uid 0

  @Test func uidZeroToken_isAWildcard_forEveryUidOfItsChannel() throws {
    let token = Self.sign(uid: 0)
    for uid: UInt32 in [0, 1, 7, 1_000_000, .max] {
      #expect(
        try Self.signer.verify(token, for: .channel(Self.lobby, uid: uid), wallClock: Self.now) > 0)
    }
    let other = try ChannelName(validating: Array("other".utf8))
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(token, for: .channel(other, uid: 7), wallClock: Self.now)
    }
  }

  @Test func uidToken_doesNotGrantUidZero() {
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(
        Self.sign(uid: 7), for: .channel(Self.lobby, uid: 0), wallClock: Self.now)
    }
  }

  // MARK: - Login tokens

  @Test func userToken_verifiesForItsUser_andNeverAsAChannelToken() throws {
    let alice = try UserID(validating: Array("alice".utf8))
    let token = Self.signer.sign(.user(alice), expiresAt: Self.now + 10)
    #expect(try Self.signer.verify(token, for: .user(alice), wallClock: Self.now) == Self.now + 10)
    let bob = try UserID(validating: Array("bob".utf8))
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(token, for: .user(bob), wallClock: Self.now)
    }
    // A channel named like the user's MAC field, with every uid: never the same message.
    let lookalike = try ChannelName(validating: Array("u:alice".utf8))
    for uid: UInt32 in [0, 1] {
      #expect(throws: TokenError.invalid) {
        try Self.signer.verify(token, for: .channel(lookalike, uid: uid), wallClock: Self.now)
      }
    }
  }

  // MARK: - Malformed

  @Test(arguments: [
    "", "1", "1:", "1::", "2:100:00", "1:0100:" + String(repeating: "0", count: 64),
    "1:+100:" + String(repeating: "0", count: 64),
    "1:123456789012345678901:" + String(repeating: "0", count: 64),
    "1:100:" + String(repeating: "A", count: 64), "1:100:" + String(repeating: "0", count: 63),
    "1:100:" + String(repeating: "0", count: 64) + ":",
    "1:18446744073709551616:" + String(repeating: "0", count: 64),
  ])
  func verify_isInvalid_forMalformedText(_ text: String) {
    #expect(throws: TokenError.invalid) {
      try Self.signer.verify(
        Array(text.utf8), for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
    }
  }

  @Test func verify_neverTraps_onRandomBytes() {
    var random = SeededRandom(seed: 3)
    for _ in 0..<2000 {
      let length = Int(random.next() % 100)
      let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      #expect(throws: TokenError.invalid) {
        try Self.signer.verify(bytes, for: .channel(Self.lobby, uid: 7), wallClock: Self.now)
      }
    }
  }

  @Test func constantTimeEqual_comparesLengthAndEveryByte() {
    #expect(TokenSigner.constantTimeEqual([1, 2, 3], [1, 2, 3]))
    #expect(!TokenSigner.constantTimeEqual([1, 2, 3], [1, 2, 4]))
    #expect(!TokenSigner.constantTimeEqual([1, 2, 3], [1, 2]))
    #expect(TokenSigner.constantTimeEqual([], []))
  }
}
