// SPDX-License-Identifier: Apache-2.0
import CSodium
import TetherCore

/// ``DatagramCipher`` on libsodium's ChaCha20-Poly1305 (IETF): one direction's data key of
/// protocol version 2 (docs/PROTOCOL.md §12.7). Not on the wire yet: version 1 still runs.
public struct SodiumDatagramCipher: DatagramCipher {
  public static var tagLength: Int { Int(crypto_aead_chacha20poly1305_ietf_ABYTES) }
  private let key: [UInt8]

  /// - Returns: nil unless `key` has 32 bytes and libsodium starts.
  public init?(key: [UInt8]) {
    guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES), sodium_init() >= 0
    else { return nil }
    self.key = key
  }

  public func seal(
    counter: UInt64, ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>,
    into out: inout [UInt8]
  ) -> Bool {
    seal(nonce: Self.nonce(counter: counter), ad: ad, plaintext: plaintext, into: &out)
  }

  public func open(
    counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    open(nonce: Self.nonce(counter: counter), ad: ad, sealed: sealed, into: &out)
  }

  /// The AEAD with a nonce given whole (the RFC 8439 vectors use their own nonces).
  func seal(
    nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    var sealed = [UInt8](repeating: 0, count: plaintext.count + Self.tagLength)
    var length: UInt64 = 0
    let ad = Array(ad)
    let plaintext = Array(plaintext)
    let status = sealed.withUnsafeMutableBufferPointer { s -> Int32 in
      guard let base = s.baseAddress else { return -1 }
      return crypto_aead_chacha20poly1305_ietf_encrypt(
        base, &length, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil,
        nonce, key)
    }
    guard status == 0 else { return false }
    out.append(contentsOf: sealed.prefix(Int(length)))
    return true
  }

  func open(
    nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    guard sealed.count >= Self.tagLength else { return false }
    var plain = [UInt8](repeating: 0, count: sealed.count - Self.tagLength + 1)
    var length: UInt64 = 0
    let ad = Array(ad)
    let sealed = Array(sealed)
    let status = plain.withUnsafeMutableBufferPointer { p -> Int32 in
      guard let base = p.baseAddress else { return -1 }
      return crypto_aead_chacha20poly1305_ietf_decrypt(
        base, &length, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce,
        key)
    }
    guard status == 0 else { return false }
    out.append(contentsOf: plain.prefix(Int(length)))
    return true
  }
}
