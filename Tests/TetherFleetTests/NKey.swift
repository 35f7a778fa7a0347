// SPDX-License-Identifier: Apache-2.0
import CSodium
import TetherLab

/// A fresh Ed25519 key pair in NATS's nkey text: base32 (no padding) of a prefix byte, the
/// key, and a CRC-16 (XMODEM, little-endian) of both. The prefix says the key's role; a
/// seed is `S` and the role (`SO…`, `SA…`, `SU…`).
struct NKey {
  enum Role: UInt8 {
    case account = 0
    case `operator` = 14
    case user = 20

    /// The public key's first byte (its text starts with A, O or U).
    var prefix: UInt8 { rawValue << 3 }
  }

  static let seedPrefix: UInt8 = 18 << 3

  /// `A…`, `O…` or `U…`: how servers, JWTs and configs name the key.
  let publicKey: String
  /// `SA…`, `SO…` or `SU…`: what a `.creds` or seed file holds.
  let seed: String
  private let secretKey: [UInt8]

  init(_ role: Role) throws {
    guard sodium_init() >= 0 else { throw LabError("libsodium did not start") }
    var seed = [UInt8](repeating: 0, count: 32)
    var publicKey = [UInt8](repeating: 0, count: 32)
    var secretKey = [UInt8](repeating: 0, count: 64)
    randombytes_buf(&seed, 32)
    guard crypto_sign_seed_keypair(&publicKey, &secretKey, seed) == 0 else {
      throw LabError("no Ed25519 key pair")
    }
    // The seed's two prefix bytes carry S's 5 bits, then the role's 5 bits, then 3 zeros.
    let seedHead = [Self.seedPrefix | (role.prefix >> 5), (role.prefix & 31) << 3]
    self.publicKey = Self.encode([role.prefix] + publicKey)
    self.seed = Self.encode(seedHead + seed)
    self.secretKey = secretKey
  }

  /// The Ed25519 signature of `message` (64 bytes).
  func sign(_ message: [UInt8]) -> [UInt8] {
    var signature = [UInt8](repeating: 0, count: 64)
    _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey)
    return signature
  }

  static func encode(_ raw: [UInt8]) -> String {
    let crc = crc16(raw)
    return base32(raw + [UInt8(crc & 0xff), UInt8(crc >> 8)])
  }

  static func crc16(_ bytes: [UInt8]) -> UInt16 {
    var crc: UInt16 = 0
    for byte in bytes {
      crc ^= UInt16(byte) << 8
      for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
    }
    return crc
  }

  static func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    var text = ""
    var buffer = 0
    var bits = 0
    for byte in bytes {
      buffer = (buffer << 8) | Int(byte)
      bits += 8
      while bits >= 5 {
        text.append(alphabet[(buffer >> (bits - 5)) & 31])
        bits -= 5
      }
    }
    if bits > 0 { text.append(alphabet[(buffer << (5 - bits)) & 31]) }
    return text
  }
}
