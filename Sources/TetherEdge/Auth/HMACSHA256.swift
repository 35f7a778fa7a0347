// SPDX-License-Identifier: Apache-2.0
import CSodium

/// HMAC-SHA256 (RFC 2104, RFC 4231), from libsodium: the keyed MAC of the edge's tokens and
/// admin datagrams. Tether writes no cryptography of its own.
enum HMACSHA256 {
  static let length = Int(crypto_auth_hmacsha256_BYTES)

  /// libsodium is ready (its CPU feature probe has run) before the first MAC; `sodium_init`
  /// may be called from several threads and again, and fails only without a random source,
  /// which a MAC does not use.
  private static let ready: Bool = sodium_init() >= 0

  /// The 32-byte MAC of `message` under `key` (any length: a key longer than SHA-256's
  /// block is hashed first, as RFC 2104 says; an empty one is a block of zeros).
  static func mac<Message: Collection<UInt8>>(key: [UInt8], message: Message) -> [UInt8] {
    _ = ready
    var state = crypto_auth_hmacsha256_state()
    // libsodium takes no NULL, even for no bytes: an empty key points at a zero byte.
    var zero: UInt8 = 0
    let keyed = key.withUnsafeBufferPointer { key in
      key.baseAddress.map { crypto_auth_hmacsha256_init(&state, $0, key.count) }
    }
    if keyed == nil { _ = crypto_auth_hmacsha256_init(&state, &zero, 0) }
    let fed: Void? = message.withContiguousStorageIfAvailable { update(&state, $0) }
    if fed == nil { Array(message).withUnsafeBufferPointer { update(&state, $0) } }
    var out = [UInt8](repeating: 0, count: length)
    out.withUnsafeMutableBufferPointer { out in
      if let base = out.baseAddress { _ = crypto_auth_hmacsha256_final(&state, base) }
    }
    return out
  }

  private static func update(
    _ state: inout crypto_auth_hmacsha256_state, _ bytes: UnsafeBufferPointer<UInt8>
  ) {
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    _ = crypto_auth_hmacsha256_update(&state, base, UInt64(bytes.count))
  }
}
