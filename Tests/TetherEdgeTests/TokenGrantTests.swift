// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// What an opened token grants, and until when, as the edge judges it (``TokenGrant/admits(_:)``
/// and ``EdgeServer/verify(_:for:wallClock:)``): the rules version 1's signer checked, now
/// on version 2's opened tokens (the opening itself: TokenV2Tests).
struct TokenGrantTests {
  static let now: UInt64 = 1_700_000_000
  static let lobby = try! ChannelName(validating: Array("lobby".utf8))
  static let other = try! ChannelName(validating: Array("other".utf8))
  static var server: EdgeServer<SimCrypto> {
    EdgeServer(config: World.config(), crypto: SimCrypto(seed: 1))
  }

  static func verify(_ granted: TokenGrant, expiry: UInt64 = now + 60, for wanted: TokenGrant)
    throws(TokenError) -> UInt64
  {
    try server.verify(.opened(granted, expiry: expiry), for: wanted, wallClock: now)
  }

  @Test func aGrant_returnsItsExpiry_forWhatItGrants() throws {
    #expect(
      try Self.verify(.channel(Self.lobby, uid: 7), for: .channel(Self.lobby, uid: 7)) == Self.now
        + 60)
  }

  @Test func aGrant_isInvalid_forAnotherChannelOrUid() {
    #expect(throws: TokenError.invalid) {
      try Self.verify(.channel(Self.lobby, uid: 7), for: .channel(Self.other, uid: 7))
    }
    #expect(throws: TokenError.invalid) {
      try Self.verify(.channel(Self.lobby, uid: 7), for: .channel(Self.lobby, uid: 8))
    }
  }

  @Test func expiry_isExpiredAtAndAfterIt_andValidTheSecondBefore() throws {
    let grant = TokenGrant.channel(Self.lobby, uid: 7)
    #expect(throws: TokenError.expired) { try Self.verify(grant, expiry: Self.now, for: grant) }
    #expect(throws: TokenError.expired) {
      try Self.verify(grant, expiry: Self.now - 1000, for: grant)
    }
    #expect(try Self.verify(grant, expiry: Self.now + 1, for: grant) == Self.now + 1)
  }

  @Test func expiryZero_neverExpires() throws {
    let grant = TokenGrant.channel(Self.lobby, uid: 7)
    #expect(try Self.server.verify(.opened(grant, expiry: 0), for: grant, wallClock: .max) == 0)
  }

  @Test func anotherGrant_winsOverExpiry() {
    #expect(throws: TokenError.invalid) {
      try Self.verify(.channel(Self.lobby, uid: 7), expiry: 5, for: .channel(Self.lobby, uid: 8))
    }
  }

  @Test func uidZero_isAWildcard_forEveryUidOfItsChannel() throws {
    for uid: UInt32 in [0, 1, 7, 1_000_000, .max] {
      #expect(
        try Self.verify(.channel(Self.lobby, uid: 0), for: .channel(Self.lobby, uid: uid)) > 0)
    }
    #expect(throws: TokenError.invalid) {
      try Self.verify(.channel(Self.lobby, uid: 0), for: .channel(Self.other, uid: 7))
    }
  }

  @Test func aUidGrant_doesNotGrantUidZero() {
    #expect(throws: TokenError.invalid) {
      try Self.verify(.channel(Self.lobby, uid: 7), for: .channel(Self.lobby, uid: 0))
    }
  }

  @Test func aUserGrant_grantsItsUser_andNeverAChannel() throws {
    let alice = try UserID(validating: Array("alice".utf8))
    let bob = try UserID(validating: Array("bob".utf8))
    #expect(try Self.verify(.user(alice), for: .user(alice)) == Self.now + 60)
    #expect(throws: TokenError.invalid) { try Self.verify(.user(alice), for: .user(bob)) }
    let lookalike = try ChannelName(validating: Array("alice".utf8))
    for uid: UInt32 in [0, 1] {
      #expect(throws: TokenError.invalid) {
        try Self.verify(.user(alice), for: .channel(lookalike, uid: uid))
      }
      #expect(throws: TokenError.invalid) {
        try Self.verify(.channel(lookalike, uid: uid), for: .user(alice))
      }
    }
  }
}
