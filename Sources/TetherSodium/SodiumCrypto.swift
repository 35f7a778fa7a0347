// SPDX-License-Identifier: Apache-2.0
internal import CSodium

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh compiles these
  // files into the module Tether with TetherCore's), present in SwiftPM's.
  import TetherCore
#endif

/// ``SessionCrypto`` on libsodium 1.0.18: what the driver and the edge seal, open, derive
/// and draw with (docs/PROTOCOL.md §12.1). Every call checks its sizes before it reaches
/// libsodium, so a wrong size is a nil or an empty result, never a read past a buffer.
///
/// Random bytes come from libsodium's process-wide generator. `sodium_init` must have run
/// once in the process (``SodiumCrypto/start()``); libsodium makes it safe to call again
/// and from several threads.
///
/// Two builds of the device library change it, and neither is ever shipped (the symbol
/// check of `make abi-check` refuses both): with `TETHER_TEST_CRYPTO` every random draw
/// comes from one seeded stream once a test has set its seed (``SeededStream``), so that
/// x86_64, aarch64 and armv7 reproduce PyNaCl's bytes; with `TETHER_NULL_CRYPTO` both
/// AEADs and X25519 are the null ones of ``NullCrypto``, so that a fuzzer's fake server
/// gets past the handshake.
public struct SodiumCrypto: SessionCrypto {
  public typealias Cipher = SodiumDatagramCipher

  public init() {}

  /// Starts libsodium (`sodium_init`); false if it cannot (no random source).
  public static func start() -> Bool { sodium_init() >= 0 }

  public func randomBytes(count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: max(count, 0))
    bytes.withUnsafeMutableBytes { randomBytes(into: $0) }
    return bytes
  }

  public func randomBytes(into out: UnsafeMutableRawBufferPointer) {
    guard let base = out.baseAddress else { return }
    #if TETHER_TEST_CRYPTO
      if SeededStream.draw(into: out) { return }
    #endif
    randombytes_buf(base, out.count)
  }

  public func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
    let made = out.withUnsafeMutableBytes { out in
      secret.withUnsafeBytes { x25519PublicKey(into: out, secret: $0) }
    }
    return made ? out : nil
  }

  public func x25519PublicKey(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer
  ) -> Bool {
    guard out.count == Int(crypto_scalarmult_BYTES),
      secret.count == Int(crypto_scalarmult_SCALARBYTES)
    else { return false }
    #if TETHER_NULL_CRYPTO
      out.copyBytes(from: NullCrypto.publicKey(secret: Array(secret)))
      return true
    #else
      guard let base = Self.bytes(out), let secret = Self.bytes(secret) else { return false }
      return crypto_scalarmult_base(base, secret) == 0
    #endif
  }

  public func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
    let made = out.withUnsafeMutableBytes { out in
      secret.withUnsafeBytes { secret in
        publicKey.withUnsafeBytes { x25519(into: out, secret: secret, publicKey: $0) }
      }
    }
    return made ? out : nil
  }

  public func x25519(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
    publicKey: UnsafeRawBufferPointer
  ) -> Bool {
    guard out.count == Int(crypto_scalarmult_BYTES),
      secret.count == Int(crypto_scalarmult_SCALARBYTES),
      publicKey.count == Int(crypto_scalarmult_BYTES)
    else { return false }
    #if TETHER_NULL_CRYPTO
      guard let shared = NullCrypto.shared(secret: Array(secret), publicKey: Array(publicKey)[...])
      else { return false }
      out.copyBytes(from: shared)
      return true
    #else
      guard let base = Self.bytes(out), let secret = Self.bytes(secret),
        let point = Self.bytes(publicKey)
      else { return false }
      return crypto_scalarmult(base, secret, point) == 0
    #endif
  }

  public func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8] {
    guard length >= Int(crypto_generichash_blake2b_BYTES_MIN),
      length <= Int(crypto_generichash_blake2b_BYTES_MAX),
      key.count <= Int(crypto_generichash_blake2b_KEYBYTES_MAX),
      salt.count == Int(crypto_generichash_blake2b_SALTBYTES),
      personal.count == Int(crypto_generichash_blake2b_PERSONALBYTES)
    else { return [] }
    var out = [UInt8](repeating: 0, count: length)
    let status = out.withUnsafeMutableBufferPointer { out -> Int32 in
      input.withUnsafeBufferPointer { input -> Int32 in
        key.withUnsafeBufferPointer { key -> Int32 in
          guard let base = out.baseAddress else { return -1 }
          return crypto_generichash_blake2b_salt_personal(
            base, length, input.baseAddress, UInt64(input.count),
            key.count == 0 ? nil : key.baseAddress, key.count, salt, personal)
        }
      }
    }
    return status == 0 ? out : []
  }

  public func aeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)
    else { return [] }
    return Self.sealed(plaintext, ad: ad, tag: Int(crypto_aead_chacha20poly1305_ietf_ABYTES)) {
      crypto_aead_chacha20poly1305_ietf_encrypt($0, nil, $1, $2, $3, $4, nil, nonce, key)
    }
  }

  public func aeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)
    else { return nil }
    return Self.opened(sealed, ad: ad, tag: Int(crypto_aead_chacha20poly1305_ietf_ABYTES)) {
      crypto_aead_chacha20poly1305_ietf_decrypt($0, nil, nil, $1, $2, $3, $4, nonce, key)
    }
  }

  public func xaeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    guard key.count == Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    else { return [] }
    return Self.sealed(plaintext, ad: ad, tag: Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)) {
      crypto_aead_xchacha20poly1305_ietf_encrypt($0, nil, $1, $2, $3, $4, nil, nonce, key)
    }
  }

  public func xaeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    guard key.count == Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    else { return nil }
    return Self.opened(sealed, ad: ad, tag: Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)) {
      crypto_aead_xchacha20poly1305_ietf_decrypt($0, nil, nil, $1, $2, $3, $4, nonce, key)
    }
  }

  public func cipher(key: [UInt8]) -> SodiumDatagramCipher? { SodiumDatagramCipher(key: key) }

  public func cipher(keyBytes: KeyBytes) -> SodiumDatagramCipher? {
    SodiumDatagramCipher(keyBytes: keyBytes)
  }

  public func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    // libsodium 1.0.18's decoder reads some bytes past ASCII (0xDF, 0xAD) as '_', so two
    // texts would decode to one byte string: only ASCII reaches it.
    guard text.allSatisfy({ $0 < 0x80 }) else { return nil }
    // Base64 holds 3 bytes in 4 characters; a text of n characters decodes to at most
    // n * 3 / 4 bytes.
    var out = [UInt8](repeating: 0, count: text.count * 3 / 4 + 1)
    var length = 0
    let status = out.withUnsafeMutableBufferPointer { out -> Int32 in
      text.withUnsafeBufferPointer { text -> Int32 in
        guard let base = out.baseAddress, let input = text.baseAddress else {
          return text.isEmpty ? 0 : -1
        }
        var end: UnsafePointer<CChar>? = nil
        let result = input.withMemoryRebound(to: CChar.self, capacity: text.count) { chars in
          sodium_base642bin(
            base, out.count, chars, text.count, nil, &length, &end,
            sodium_base64_VARIANT_URLSAFE_NO_PADDING)
        }
        // Trailing characters that are not base64 stop the decoder early: refuse them.
        let consumed = end.map { $0 - UnsafeRawPointer(input).assumingMemoryBound(to: CChar.self) }
        return result == 0 && consumed == text.count ? 0 : -1
      }
    }
    guard status == 0 else { return nil }
    out.removeSubrange(length...)
    return out
  }

  public func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    let variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING
    let size = sodium_base64_encoded_len(bytes.count, variant)
    var out = [UInt8](repeating: 0, count: size)
    out.withUnsafeMutableBufferPointer { out in
      bytes.withUnsafeBufferPointer { bytes in
        guard let base = out.baseAddress else { return }
        base.withMemoryRebound(to: CChar.self, capacity: out.count) { chars in
          _ = sodium_bin2base64(chars, out.count, bytes.baseAddress, bytes.count, variant)
        }
      }
    }
    // sodium_bin2base64 ends the text with a NUL, counted in the encoded length.
    if out.last == 0 { out.removeLast() }
    return out
  }

  public func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBufferPointer { a in
      b.withUnsafeBufferPointer { b in
        guard let x = a.baseAddress, let y = b.baseAddress else { return false }
        return sodium_memcmp(x, y, a.count) == 0
      }
    }
  }

  public func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
      if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
    }
  }

  public func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool {
    guard out.count >= Int(crypto_generichash_blake2b_BYTES_MIN),
      out.count <= Int(crypto_generichash_blake2b_BYTES_MAX),
      key.count <= Int(crypto_generichash_blake2b_KEYBYTES_MAX),
      salt.count == Int(crypto_generichash_blake2b_SALTBYTES),
      personal.count == Int(crypto_generichash_blake2b_PERSONALBYTES),
      let base = out.baseAddress, let salt = salt.baseAddress, let personal = personal.baseAddress
    else { return false }
    return crypto_generichash_blake2b_salt_personal(
      base.assumingMemoryBound(to: UInt8.self), out.count, Self.bytes(input),
      UInt64(input.count), key.count == 0 ? nil : Self.bytes(key), key.count,
      salt.assumingMemoryBound(to: UInt8.self), personal.assumingMemoryBound(to: UInt8.self))
      == 0
  }

  public func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool {
    let tag = Int(crypto_aead_chacha20poly1305_ietf_ABYTES)
    guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES),
      out.count == plaintext.count + tag, let base = out.baseAddress,
      let key = Self.bytes(key), let nonce = Self.bytes(nonce)
    else { return false }
    #if TETHER_NULL_CRYPTO
      out.copyBytes(from: NullCrypto.seal(Array(plaintext)[...]))
      return true
    #else
      return crypto_aead_chacha20poly1305_ietf_encrypt(
        base.assumingMemoryBound(to: UInt8.self), nil, Self.bytes(plaintext),
        UInt64(plaintext.count), Self.bytes(ad), UInt64(ad.count), nil, nonce, key) == 0
    #endif
  }

  public func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    if let base = bytes.baseAddress { sodium_memzero(base, bytes.count) }
  }

  public func xaeadOpen(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
  ) -> Bool {
    let tag = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    guard key.count == Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES),
      nonce.count == Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES),
      sealed.count >= tag, out.count == sealed.count - tag,
      let key = Self.bytes(key), let nonce = Self.bytes(nonce), let input = Self.bytes(sealed)
    else { return false }
    #if TETHER_NULL_CRYPTO
      return NullCrypto.open(sealed, into: out)
    #else
      return decrypting(into: out) {
        crypto_aead_xchacha20poly1305_ietf_decrypt(
          $0, nil, nil, input, UInt64(sealed.count), Self.bytes(ad), UInt64(ad.count), nonce, key)
      }
    #endif
  }

  public func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
    -> Int?
  {
    // As base64URLDecode(_:): ASCII only (libsodium 1.0.18 reads 0xDF and 0xAD as '_'), and
    // every character consumed.
    guard text.allSatisfy({ $0 < 0x80 }) else { return nil }
    guard let input = text.baseAddress, let base = Self.bytes(out) else {
      return text.isEmpty ? 0 : nil
    }
    var length = 0
    var end: UnsafePointer<CChar>? = nil
    let chars = input.assumingMemoryBound(to: CChar.self)
    let result = sodium_base642bin(
      base, out.count, chars, text.count, nil, &length, &end,
      sodium_base64_VARIANT_URLSAFE_NO_PADDING)
    return result == 0 && end.map({ $0 - chars }) == text.count ? length : nil
  }

  public func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return a.isEmpty }
    return sodium_memcmp(x, y, a.count) == 0
  }

  /// The bytes at `buffer` for a C call (nil for an empty buffer).
  private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
    buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
  }

  /// The bytes at `buffer` for a C call to write (nil for an empty buffer).
  private static func bytes(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<
    UInt8
  >? {
    buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
  }

  /// Seals with `call(out, plaintext, plaintextLength, ad, adLength)`, returning the
  /// ciphertext and tag, or empty if the call refused.
  private static func sealed(
    _ plaintext: ArraySlice<UInt8>, ad: ArraySlice<UInt8>, tag: Int,
    _ call: (
      UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>?, UInt64, UnsafePointer<UInt8>?, UInt64
    ) -> Int32
  ) -> [UInt8] {
    #if TETHER_NULL_CRYPTO
      return NullCrypto.seal(plaintext)
    #else
      var out = [UInt8](repeating: 0, count: plaintext.count + tag)
      let status = out.withUnsafeMutableBufferPointer { out -> Int32 in
        plaintext.withUnsafeBufferPointer { text -> Int32 in
          ad.withUnsafeBufferPointer { ad -> Int32 in
            guard let base = out.baseAddress else { return -1 }
            return call(
              base, text.baseAddress, UInt64(text.count), ad.baseAddress, UInt64(ad.count))
          }
        }
      }
      return status == 0 ? out : []
    #endif
  }

  /// Opens with `call(out, sealed, sealedLength, ad, adLength)`; nil if it does not open.
  private static func opened(
    _ sealed: ArraySlice<UInt8>, ad: ArraySlice<UInt8>, tag: Int,
    _ call: (
      UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>, UInt64, UnsafePointer<UInt8>?, UInt64
    ) -> Int32
  ) -> [UInt8]? {
    guard sealed.count >= tag else { return nil }
    #if TETHER_NULL_CRYPTO
      return NullCrypto.open(sealed)
    #else
      // One spare byte, so a buffer exists even for an empty plaintext.
      var out = [UInt8](repeating: 0, count: sealed.count - tag + 1)
      let status = out.withUnsafeMutableBufferPointer { out -> Int32 in
        sealed.withUnsafeBufferPointer { input -> Int32 in
          ad.withUnsafeBufferPointer { ad -> Int32 in
            guard let base = out.baseAddress, let input = input.baseAddress else { return -1 }
            return call(base, input, UInt64(sealed.count), ad.baseAddress, UInt64(ad.count))
          }
        }
      }
      guard status == 0 else { return nil }
      out.removeLast()
      return out
    #endif
  }
}
