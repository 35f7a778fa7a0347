// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSodium

/// Mints protocol version 2 tokens (docs/PROTOCOL.md §12.4): the library call for app
/// servers written in Swift. Python app servers use `contrib/python/tether_token.py`, which
/// makes the same bytes from the same random draws.
///
/// ```swift
/// let minter = try TokenMinter(certificate: Array(certificate.utf8))
/// let token = minter.mint(
///   appID: try AppID(validating: "my-app".utf8),
///   grant: .channel(try ChannelName(validating: "room-1".utf8), uid: 7),
///   expiresAt: now + 3600)
/// ```
///
/// A token is a bearer secret: whoever holds its text can join as its grant says. Hand it
/// to the device over TLS and never log it (Tether never does).
///
/// Each token draws 32 random bytes (its device secret), then 24 (its nonce), in that order,
/// through ``SessionCrypto/randomBytes(count:)``: a test or the simulation that gives the
/// crypto a seeded stream gets the same token every run. Many app servers may mint under
/// one certificate at once: the 192-bit random nonce needs no counter shared between them.
public struct TokenMinter<Crypto: SessionCrypto> {
  private let crypto: Crypto
  /// `K_token` and the key id of the certificate.
  private let keys: CertificateKeys

  public init(crypto: Crypto, keys: CertificateKeys) {
    self.crypto = crypto
    self.keys = keys
  }

  /// The token's text: "2." then the 251 binary bytes in base64url without padding, 337
  /// printable ASCII characters (it fits every place that takes a token, at most 512).
  /// - Parameters:
  ///   - appID: the app the token is for.
  ///   - grant: a channel and uid (uid 0: any uid of the channel), or a login user id.
  ///   - expiresAt: unix seconds after which the edge refuses it; 0: it never expires.
  public func mint(appID: AppID, grant: TokenGrant, expiresAt: UInt64) -> String {
    let binary = mintBinary(appID: appID, grant: grant, expiresAt: expiresAt)
    let text = TokenV2Layout.textPrefix + crypto.base64URLEncode(binary[...])
    return String(decoding: text, as: UTF8.self)
  }

  /// The binary token `T` (251 bytes) of ``mint(appID:grant:expiresAt:)``.
  public func mintBinary(appID: AppID, grant: TokenGrant, expiresAt: UInt64) -> [UInt8] {
    var header: [UInt8] = [TokenV2Layout.version]
    header.appendBigEndian(keys.keyID)
    header.appendBigEndian(expiresAt)
    let secret = crypto.randomBytes(count: TokenV2Layout.secret.count)
    let nonce = crypto.randomBytes(count: TokenV2Layout.nonce.count)
    var fields = Self.privateFields(secret: secret, appID: appID, grant: grant)
    let sealed = crypto.xaeadSeal(
      key: keys.token, nonce: nonce, ad: header[...], plaintext: fields[...])
    // The secret stays in the token (the device needs it), but no other copy does.
    crypto.wipe(&fields)
    return header + secret + nonce + sealed
  }

  /// `P` (168 bytes): the secret, the grant kind, the app id, the name, the uid, a reserved
  /// zero; each name zero-filled to 64 bytes, so the sealed part's size tells nothing.
  static func privateFields(secret: [UInt8], appID: AppID, grant: TokenGrant) -> [UInt8] {
    let (kind, name, uid) = grant.fields
    var fields = secret
    fields.append(kind)
    TokenV2Layout.appendName(appID.bytes, to: &fields)
    TokenV2Layout.appendName(name, to: &fields)
    fields.appendBigEndian(uid)
    fields.append(0)
    return fields
  }
}

extension TokenMinter where Crypto == SodiumCrypto {
  /// A minter on libsodium for `certificate` (the bytes of the app certificate as given).
  /// - Throws: ``CertificateKeyError/empty`` for an empty certificate,
  ///   ``CertificateKeyError/sodium`` if libsodium cannot start.
  public init(certificate: [UInt8]) throws(CertificateKeyError) {
    self.init(crypto: SodiumCrypto(), keys: try CertificateKeys(certificate: certificate))
  }
}

/// A token's expiry as `tether-edge token --expire-seconds` gives it.
public enum TokenExpiry {
  /// `seconds` after `now` (unix seconds), saturating; 0 (never) when `seconds` is 0.
  public static func after(_ seconds: UInt64, now: UInt64) -> UInt64 {
    guard seconds != 0 else { return 0 }
    let (sum, overflow) = now.addingReportingOverflow(seconds)
    return overflow ? .max : sum
  }
}
