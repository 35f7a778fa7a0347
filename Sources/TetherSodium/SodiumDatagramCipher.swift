// SPDX-License-Identifier: Apache-2.0
internal import CSodium

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// ``DatagramCipher`` on libsodium's ChaCha20-Poly1305 (IETF): one direction's data key of
/// protocol version 2 (docs/PROTOCOL.md §12.7), for the driver and the edge alike.
/// Both calls encrypt or decrypt straight into the caller's buffer.
public struct SodiumDatagramCipher: DatagramCipher {
  public static var tagLength: Int { Int(crypto_aead_chacha20poly1305_ietf_ABYTES) }
  /// Inline, not an array: the sealed data that holds two ciphers is copied with no
  /// reference counting.
  private let key: KeyBytes

  /// - Returns: nil unless `key` has 32 bytes and libsodium starts.
  public init?(key: [UInt8]) {
    guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES),
      let key = KeyBytes(key), sodium_init() >= 0
    else { return nil }
    self.key = key
  }

  /// - Returns: nil unless libsodium starts.
  public init?(keyBytes: KeyBytes) {
    guard sodium_init() >= 0 else { return nil }
    key = keyBytes
  }

  public func seal(
    counter: UInt64, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8],
    adStart: Int
  ) -> Bool {
    var nonce = Self.nonceWords(counter)
    return withUnsafeBytes(of: &nonce) { bytes in
      guard let base = bytes.baseAddress else { return false }
      return seal(
        nonce: base.assumingMemoryBound(to: UInt8.self), plaintext: plaintext,
        appendingTo: &out, adStart: adStart)
    }
  }

  public func open(
    counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    var nonce = Self.nonceWords(counter)
    return withUnsafeBytes(of: &nonce) { bytes in
      guard let base = bytes.baseAddress else { return false }
      return open(
        nonce: base.assumingMemoryBound(to: UInt8.self), ad: ad, sealed: sealed, into: &out)
    }
  }

  public func seal(
    counter: UInt64, inPlace datagram: UnsafeMutableRawBufferPointer, adCount: Int
  ) -> Bool {
    let tag = Self.tagLength
    guard adCount >= 0, datagram.count - adCount >= tag,
      let base = datagram.baseAddress?.assumingMemoryBound(to: UInt8.self)
    else { return false }
    let length = datagram.count - adCount - tag
    #if TETHER_NULL_CRYPTO
      // The null AEAD: the ciphertext is the plaintext, the tag zeros.
      (base + adCount + length).initialize(repeating: 0, count: tag)
      return true
    #else
      var nonce = Self.nonceWords(counter)
      return withUnsafeBytes(of: &nonce) { nonce in
        key.withUnsafeBytes { key in
          guard let nonce = nonce.baseAddress, let key = key.baseAddress else { return false }
          // In place: libsodium allows the ciphertext to be the plaintext's own bytes.
          return crypto_aead_chacha20poly1305_ietf_encrypt_detached(
            base + adCount, base + adCount + length, nil, base + adCount, UInt64(length), base,
            UInt64(adCount), nil, nonce.assumingMemoryBound(to: UInt8.self),
            key.assumingMemoryBound(to: UInt8.self)) == 0
        }
      }
    #endif
  }

  public func open(
    counter: UInt64, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
    into out: UnsafeMutableRawBufferPointer
  ) -> Bool {
    let tag = Self.tagLength
    guard sealed.count >= tag, out.count == sealed.count - tag,
      let input = sealed.baseAddress?.assumingMemoryBound(to: UInt8.self)
    else { return false }
    #if TETHER_NULL_CRYPTO
      return NullCrypto.open(sealed, into: out)
    #else
      var nonce = Self.nonceWords(counter)
      return withUnsafeBytes(of: &nonce) { nonce in
        key.withUnsafeBytes { key in
          guard let nonce = nonce.baseAddress, let key = key.baseAddress else { return false }
          return decrypting(into: out) {
            crypto_aead_chacha20poly1305_ietf_decrypt(
              $0, nil, nil, input, UInt64(sealed.count),
              ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
              nonce.assumingMemoryBound(to: UInt8.self), key.assumingMemoryBound(to: UInt8.self))
          }
        }
      }
    #endif
  }

  /// The nonce of `counter` (``DatagramCipher/nonce(counter:)``'s 12 bytes: four zero
  /// bytes, then the counter big-endian) as three words on the stack, so that sealing or
  /// opening a datagram allocates nothing.
  static func nonceWords(_ counter: UInt64) -> (UInt32, UInt32, UInt32) {
    (
      0, UInt32(truncatingIfNeeded: counter >> 32).bigEndian,
      UInt32(truncatingIfNeeded: counter).bigEndian
    )
  }

  /// The AEAD with a nonce given whole (the RFC 8439 vectors use their own nonces).
  public func seal(
    nonce: [UInt8], plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8], adStart: Int
  ) -> Bool {
    guard nonce.count == Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES) else { return false }
    return nonce.withUnsafeBufferPointer { nonce in
      guard let base = nonce.baseAddress else { return false }
      return seal(nonce: base, plaintext: plaintext, appendingTo: &out, adStart: adStart)
    }
  }

  /// Opens with a nonce given whole.
  public func open(
    nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    guard nonce.count == Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES) else { return false }
    return nonce.withUnsafeBufferPointer { nonce in
      guard let base = nonce.baseAddress else { return false }
      return open(nonce: base, ad: ad, sealed: sealed, into: &out)
    }
  }

  private func seal(
    nonce: UnsafePointer<UInt8>, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8],
    adStart: Int
  ) -> Bool {
    let end = out.count
    guard adStart <= end else { return false }
    #if TETHER_NULL_CRYPTO
      out.append(contentsOf: NullCrypto.seal(plaintext))
      return true
    #else
      out.append(contentsOf: repeatElement(0, count: plaintext.count + Self.tagLength))
      let status = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        plaintext.withUnsafeBufferPointer { text -> Int32 in
          key.withUnsafeBytes { key -> Int32 in
            guard let base = buffer.baseAddress, let key = key.baseAddress else { return -1 }
            return crypto_aead_chacha20poly1305_ietf_encrypt(
              base + end, nil, text.baseAddress, UInt64(text.count), base + adStart,
              UInt64(end - adStart), nil, nonce, key.assumingMemoryBound(to: UInt8.self))
          }
        }
      }
      if status != 0 { out.removeSubrange(end...) }
      return status == 0
    #endif
  }

  private func open(
    nonce: UnsafePointer<UInt8>, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>,
    into out: inout [UInt8]
  ) -> Bool {
    guard sealed.count >= Self.tagLength else { return false }
    #if TETHER_NULL_CRYPTO
      guard let plaintext = NullCrypto.open(sealed) else { return false }
      out.append(contentsOf: plaintext)
      return true
    #else
      let end = out.count
      out.append(contentsOf: repeatElement(0, count: sealed.count - Self.tagLength))
      let status = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        sealed.withUnsafeBufferPointer { sealed -> Int32 in
          ad.withUnsafeBufferPointer { ad -> Int32 in
            key.withUnsafeBytes { key -> Int32 in
              guard let base = buffer.baseAddress, let input = sealed.baseAddress,
                let key = key.baseAddress
              else { return -1 }
              return crypto_aead_chacha20poly1305_ietf_decrypt(
                base + end, nil, nil, input, UInt64(sealed.count), ad.baseAddress,
                UInt64(ad.count), nonce, key.assumingMemoryBound(to: UInt8.self))
            }
          }
        }
      }
      if status != 0 { out.removeSubrange(end...) }
      return status == 0
    #endif
  }
}

/// Calls a libsodium decrypt with where the plaintext goes: `out`'s bytes, or one spare byte
/// on the stack when `out` is empty (an empty plaintext still needs a buffer). True if the
/// call returned 0 (the text opened).
func decrypting(
  into out: UnsafeMutableRawBufferPointer, _ call: (UnsafeMutablePointer<UInt8>) -> Int32
) -> Bool {
  var spare: UInt8 = 0
  return withUnsafeMutableBytes(of: &spare) { spare in
    guard let target = (out.baseAddress ?? spare.baseAddress)?.assumingMemoryBound(to: UInt8.self)
    else { return false }
    return call(target) == 0
  }
}
