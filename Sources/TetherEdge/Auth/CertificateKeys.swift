// SPDX-License-Identifier: Apache-2.0
import CSodium

/// The keys protocol version 2 makes from an app certificate (docs/PROTOCOL.md §12.3), with
/// libsodium's BLAKE2b: the master key `M`, then `KDF(i)`, which is
/// `crypto_kdf_derive_from_key` under `M` with the context "tether02". App servers
/// without `crypto_kdf` compute the same bytes with keyed BLAKE2b, salt and personalization
/// (scripts/test/v2-vectors.py does, with Python's own hashlib, and the tests compare).
///
/// Not used on the wire yet: version 1 still runs (issue 25 builds version 2 step by step).
public struct CertificateKeys: Equatable, Sendable {
  /// The master key: BLAKE2b-256 of the certificate, personalization "tether2 cert".
  /// `crypto_kdf` takes exactly 32 bytes, and a certificate has any length.
  public let master: [UInt8]
  /// `KDF(1)`: seals and opens the private part of tokens.
  public let token: [UInt8]
  /// `KDF(2)`: reset values (§12.9).
  public let reset: [UInt8]
  /// `KDF(3)`: the admin request MAC (§12.14).
  public let admin: [UInt8]
  /// The first 2 bytes of the 16-byte `KDF(4)`, big-endian: names the certificate in a
  /// token, so app servers and edges cannot disagree about it.
  public let keyID: UInt16

  /// Subkey numbers, fixed by §12.3.
  enum Subkey: UInt64 {
    case token = 1
    case reset = 2
    case admin = 3
    case keyID = 4
  }

  /// Under 32 bytes a certificate may be a typed word: the edge warns, never refuses.
  public static let strongLength = 32

  /// - Throws: ``CertificateKeyError/empty`` for an empty certificate (§12.3: any non-empty
  ///   byte string), ``CertificateKeyError/sodium`` if libsodium cannot start.
  public init(certificate: [UInt8]) throws(CertificateKeyError) {
    guard !certificate.isEmpty else { throw .empty }
    guard sodium_init() >= 0 else { throw .sodium }
    let master = Self.master(of: certificate)
    self.master = master
    token = Self.derive(.token, length: 32, from: master)
    reset = Self.derive(.reset, length: 32, from: master)
    admin = Self.derive(.admin, length: 32, from: master)
    let id = Self.derive(.keyID, length: 16, from: master)
    keyID = UInt16(id[0]) << 8 | UInt16(id[1])
  }

  /// Whether a certificate is long enough to be random bytes rather than a word.
  public static func isStrong(_ certificate: [UInt8]) -> Bool {
    certificate.count >= strongLength
  }

  /// 32 bytes from libsodium's random source: a strong certificate (`tether-edge` prints
  /// it base64url-encoded).
  public static func generate() -> [UInt8] {
    _ = sodium_init()
    var bytes = [UInt8](repeating: 0, count: strongLength)
    bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    return bytes
  }

  private static func master(of certificate: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var salt = [UInt8](repeating: 0, count: Int(crypto_generichash_blake2b_SALTBYTES))
    var personal = [UInt8](repeating: 0, count: Int(crypto_generichash_blake2b_PERSONALBYTES))
    personal.replaceSubrange(0..<12, with: Array("tether2 cert".utf8))
    _ = out.withUnsafeMutableBufferPointer { out in
      certificate.withUnsafeBufferPointer { input in
        crypto_generichash_blake2b_salt_personal(
          out.baseAddress!, out.count, input.baseAddress!, UInt64(input.count), nil, 0,
          &salt, &personal)
      }
    }
    return out
  }

  private static func derive(_ subkey: Subkey, length: Int, from master: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: length)
    let context: [CChar] = Array("tether02".utf8).map { CChar(bitPattern: $0) }
    _ = out.withUnsafeMutableBufferPointer { out in
      master.withUnsafeBufferPointer { key in
        crypto_kdf_derive_from_key(
          out.baseAddress!, out.count, subkey.rawValue, context, key.baseAddress!)
      }
    }
    return out
  }
}

/// Why keys could not be made from a certificate.
public enum CertificateKeyError: Error, Equatable, Sendable {
  /// The certificate has no bytes.
  case empty
  /// libsodium could not start (no random source).
  case sodium
}
