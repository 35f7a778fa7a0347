// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Opens what a device sends of its version 2 token, `W` (docs/PROTOCOL.md §12.4: the
/// public header and the sealed part, 219 bytes; never the device secret), with the edge's
/// certificate and, during a rotation, the previous one.
///
/// The token names its certificate by key id. The opener tries each loaded certificate
/// whose key id is the token's: on the rare equal ids (1 in 65,536) both, current first.
/// Expiry is not judged here: an expired token still opens (the edge then refuses it
/// sealed, as TOKEN_EXPIRED, §12.6 step 5, which needs the device secret from inside).
public struct TokenOpener<Crypto: SessionCrypto> {
  private let crypto: Crypto
  private let current: CertificateKeys
  private let previous: CertificateKeys?

  public init(crypto: Crypto, current: CertificateKeys, previous: CertificateKeys? = nil) {
    self.crypto = crypto
    self.current = current
    self.previous = previous
  }

  /// The grant and device secret of `wire` (`W`).
  /// - Throws: ``TokenRefusal``, the first that applies: its size, its version, its key id,
  ///   its seal, its fields.
  public func open(_ wire: ArraySlice<UInt8>) throws(TokenRefusal) -> OpenedToken {
    guard wire.count == TokenV2Layout.wireBytes else { throw .malformed }
    let start = wire.startIndex
    let header = wire[start..<start + TokenV2Layout.header.count]
    guard header[start] == TokenV2Layout.version else { throw .version }
    var publicFields = ByteReader(header.dropFirst())
    guard let keyID = try? publicFields.u16(), let expiry = try? publicFields.u64() else {
      throw .malformed
    }
    let nonce = Array(wire[header.endIndex..<header.endIndex + TokenV2Layout.nonce.count])
    let sealed = wire[header.endIndex + TokenV2Layout.nonce.count..<wire.endIndex]

    var known = false
    for (certificate, keys) in candidates() where keys.keyID == keyID {
      known = true
      guard var fields = crypto.xaeadOpen(key: keys.token, nonce: nonce, ad: header, sealed: sealed)
      else { continue }
      defer { crypto.wipe(&fields) }
      let (appID, grant) = try Self.grant(in: fields)
      return OpenedToken(
        header: Array(header), keyID: keyID, expiry: expiry, appID: appID, grant: grant,
        deviceSecret: Array(fields[0..<TokenV2Layout.secret.count]), certificate: certificate)
    }
    throw known ? .unopened : .unknownKey
  }

  private func candidates() -> [(LoadedCertificate, CertificateKeys)] {
    guard let previous else { return [(.current, current)] }
    return [(.current, current), (.previous, previous)]
  }

  /// The app id and grant in `P`, read strictly (§8's rules: each name as its type allows,
  /// zero-filled; the uid 0 for a login grant; the reserved byte zero). A token that opens
  /// was minted with the certificate, so a field that fails here is a minter's bug, refused
  /// all the same.
  static func grant(in fields: [UInt8]) throws(TokenRefusal) -> (AppID, TokenGrant) {
    var reader = ByteReader(fields[...])
    let nameField = TokenV2Layout.nameField + 1
    guard fields.count == TokenV2Layout.privateBytes,
      (try? reader.bytes(TokenV2Layout.secret.count)) != nil,
      let kind = try? reader.u8(), let appField = try? reader.bytes(nameField),
      let appName = TokenV2Layout.name(in: appField),
      let appID = try? AppID(validating: appName),
      let name = try? reader.bytes(nameField), let uid = try? reader.u32(),
      let grant = TokenGrant(kind: kind, name: name, uid: uid),
      (try? reader.u8()) == 0
    else { throw .invalidFields }
    return (appID, grant)
  }
}

/// Which of the edge's certificates opened a token.
public enum LoadedCertificate: Equatable, Sendable {
  case current
  /// The one before a rotation, still loaded so tokens minted under it keep working.
  case previous
}

/// What a version 2 token says, once opened.
public struct OpenedToken: Equatable, Sendable {
  /// `T[0 ..< 11]`: version, key id, expiry (the ticket keeps it, §12.6).
  public let header: [UInt8]
  public let keyID: UInt16
  /// Unix seconds; 0: never expires.
  public let expiry: UInt64
  public let appID: AppID
  public let grant: TokenGrant
  /// The handshake's pre-shared key (32 bytes). A secret: wipe copies when done.
  public let deviceSecret: [UInt8]
  public let certificate: LoadedCertificate

  /// Whether the token has expired at `wallClock` (unix seconds), as version 1 judges it:
  /// valid while its expiry is 0 or after `wallClock`.
  public func isExpired(wallClock: UInt64) -> Bool {
    expiry != 0 && expiry <= wallClock
  }
}

/// Why a token's `W` was refused. Every case is the edge's REFUSE_CLEAR (invalid token,
/// §12.6 step 3): without the device secret there is nothing to seal a refusal with.
public enum TokenRefusal: Error, Equatable, Sendable {
  /// Not 219 bytes.
  case malformed
  /// Its version byte is not 2.
  case version
  /// Its key id names no loaded certificate.
  case unknownKey
  /// Its sealed part does not open under any certificate of its key id (altered, or
  /// another certificate with the same key id).
  case unopened
  /// It opened, but its private fields break §12.4's rules.
  case invalidFields
}
