// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What a token lets its holder do.
public enum TokenGrant: Equatable, Sendable {
  /// Join `channel` as `uid`. A token for uid 0 is a wildcard: it lets its holder join
  /// the channel under any uid, and it is the only kind that can ask the server to assign
  /// one (a JOIN with uid 0).
  case channel(ChannelName, uid: UInt32)
  /// Log in as this user id (the login session of docs/BEHAVIOUR.md §2).
  case user(UserID)
}

/// Why a token was not accepted.
public enum TokenError: Error, Equatable, Sendable {
  /// Not a token of this format, or its MAC does not match the app and the grant.
  case invalid
  /// Well-formed and signed, but its expiry time has passed.
  case expired
}

/// Makes and checks tokens with the app certificate.
///
/// A token is `1:<expiry>:<mac>`: the format version, the expiry in unix seconds (decimal,
/// no leading zero; `0` means it never expires) and 64 lowercase hex digits of
/// HMAC-SHA256, keyed with the app certificate, over the grant's fields joined by a NUL
/// byte (none of the fields can hold one, so no two grants share a message):
///
/// - channel: `1 NUL <app id> NUL <channel> NUL <uid, decimal> NUL <expiry, decimal>`
/// - login:   `1 NUL <app id> NUL u:<user id> NUL <expiry, decimal>`
///
/// At most 87 bytes of printable ASCII, so every token is a valid `TetherCore.Token`.
public struct TokenSigner: Sendable {
  public let appID: AppID
  /// The certificate's bytes: the key of every MAC.
  private let certificate: [UInt8]

  static let version: UInt8 = 0x31  // "1"
  static let macLength = 32

  public init(appID: AppID, certificate: [UInt8]) {
    self.appID = appID
    self.certificate = certificate
  }

  /// The token text for `grant`, valid until `expiresAt` (unix seconds; 0: never).
  public func sign(_ grant: TokenGrant, expiresAt: UInt64) -> [UInt8] {
    var text: [UInt8] = [Self.version, 0x3A]
    text.append(contentsOf: String(expiresAt).utf8)
    text.append(0x3A)
    text.append(contentsOf: Hex.encode(mac(grant, expiresAt: expiresAt)))
    return text
  }

  /// Checks `token` for `grant` at `wallClock` (unix seconds). A channel grant for uid N
  /// accepts a token for uid N or for uid 0 (the wildcard).
  /// - Returns: the token's expiry (unix seconds; 0: never).
  /// - Throws: ``TokenError/invalid`` unless the MAC matches; ``TokenError/expired`` when it
  ///   does but the expiry is not after `wallClock`.
  public func verify(_ token: [UInt8], for grant: TokenGrant, wallClock: UInt64) throws(TokenError)
    -> UInt64
  {
    guard let parsed = ParsedToken(token) else { throw .invalid }
    var valid = Self.constantTimeEqual(mac(grant, expiresAt: parsed.expiry), parsed.mac)
    if case .channel(let channel, let uid) = grant, uid != 0 {
      let wildcard = mac(.channel(channel, uid: 0), expiresAt: parsed.expiry)
      valid = Self.constantTimeEqual(wildcard, parsed.mac) || valid
    }
    guard valid else { throw .invalid }
    guard parsed.expiry == 0 || parsed.expiry > wallClock else { throw .expired }
    return parsed.expiry
  }

  /// The MAC of `grant` and `expiresAt` (32 bytes).
  func mac(_ grant: TokenGrant, expiresAt: UInt64) -> [UInt8] {
    var message: [UInt8] = [Self.version, 0]
    message.append(contentsOf: appID.bytes)
    message.append(0)
    switch grant {
    case .channel(let channel, let uid):
      message.append(contentsOf: channel.bytes)
      message.append(0)
      message.append(contentsOf: String(uid).utf8)
    case .user(let user):
      message.append(contentsOf: "u:".utf8)
      message.append(contentsOf: user.bytes)
    }
    message.append(0)
    message.append(contentsOf: String(expiresAt).utf8)
    return HMACSHA256.mac(key: certificate, message: message)
  }

  /// True when `a` and `b` hold the same bytes, in a time that depends only on their
  /// lengths (which are public: a MAC is always 32 bytes).
  static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
  }
}
