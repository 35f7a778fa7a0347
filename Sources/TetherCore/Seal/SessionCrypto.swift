// SPDX-License-Identifier: Apache-2.0
/// Every primitive protocol version 2 needs (docs/PROTOCOL.md §12.1), as one seam: the
/// driver, the edge and the simulation fill it with libsodium; TetherCore writes no
/// cryptography and imports nothing. It is taken as a generic parameter, never as an
/// existential (Embedded Swift cannot hold one cheaply), as ``DatagramCipher`` is.
///
/// The handshake's calls (a few per join) return fresh arrays; the per-datagram path goes
/// through ``Cipher``, which writes into the caller's buffer, and so do the three calls the
/// key schedule makes most (BLAKE2b, the one-time AEAD seal, the wipe of a key on the
/// stack), so that its intermediate keys, salts and labels are never arrays: each array
/// costs the device's library its allocation and reference counting (`make v2-size`). Sizes are the callers' to get
/// right; a call given a wrong size returns nil (or false), never traps.
///
/// Random bytes come from ``randomBytes(count:)``, which is not `mutating`: an
/// implementation keeps its stream where every copy of it sees the same one (libsodium's
/// process-wide generator; in tests and the simulation, one seeded stream owned by the
/// world), so that two sessions holding copies of one value never draw the same bytes.
public protocol SessionCrypto {
  /// One direction's data key (ChaCha20-Poly1305, IETF).
  associatedtype Cipher: DatagramCipher

  /// `count` random bytes (`randombytes_buf`).
  func randomBytes(count: Int) -> [UInt8]

  /// The X25519 public key of a 32-byte secret (`crypto_scalarmult_base`); nil if refused.
  func x25519PublicKey(secret: [UInt8]) -> [UInt8]?

  /// The X25519 shared secret of `secret` (32 bytes) and `publicKey` (32 bytes)
  /// (`crypto_scalarmult`); nil when it is all zeros (a low-order point) or a size is wrong.
  func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]?

  /// BLAKE2b with salt and personalization (`crypto_generichash_blake2b_salt_personal`):
  /// `length` bytes (16 … 64) of `input`, keyed with `key` (empty: unkeyed; at most 64
  /// bytes), salt and personal 16 bytes each. Empty if a size is wrong.
  func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8]

  /// ChaCha20-Poly1305 (IETF): `plaintext` sealed under `key` (32) and `nonce` (12) with
  /// `ad`: the ciphertext then the 16-byte tag. Empty if a size is wrong.
  func aeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8]

  /// The plaintext of `sealed` (ciphertext then tag) if it opens; nil if not.
  func aeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]?

  /// XChaCha20-Poly1305 (IETF), nonce 24 bytes: as ``aeadSeal(key:nonce:ad:plaintext:)``.
  func xaeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8]

  /// XChaCha20-Poly1305 (IETF): as ``aeadOpen(key:nonce:ad:sealed:)``.
  func xaeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]?

  /// The data cipher of a 32-byte key; nil if the size is wrong.
  func cipher(key: [UInt8]) -> Cipher?

  /// Base64url without padding (`sodium_base642bin`, URL-safe, no padding), decoded;
  /// nil if `text` is not exactly that.
  func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]?

  /// Base64url without padding (`sodium_bin2base64`), as ASCII bytes.
  func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8]

  /// Compares in time that does not depend on the contents (`sodium_memcmp`); false when
  /// the lengths differ.
  func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool

  /// Overwrites `bytes` with zeros in a way the compiler keeps (`sodium_memzero`).
  func wipe(_ bytes: inout [UInt8])

  /// ``blake2b(length:input:key:salt:personal:)`` into `out`, whose size (16 … 64) is the
  /// length; false if a size is wrong (then `out` holds nothing meaningful).
  func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool

  /// ``aeadSeal(key:nonce:ad:plaintext:)`` into `out`, which has room for exactly the
  /// ciphertext and the tag; false if a size is wrong.
  func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool

  /// ``wipe(_:)`` of bytes the caller holds outside an array (a key on the stack).
  func wipe(_ bytes: UnsafeMutableRawBufferPointer)

  /// ``cipher(key:)`` of a key held inline.
  func cipher(keyBytes: KeyBytes) -> Cipher?

  /// ``randomBytes(count:)`` into `out`: one draw of `out.count` bytes.
  func randomBytes(into out: UnsafeMutableRawBufferPointer)

  /// ``x25519PublicKey(secret:)`` into `out` (32 bytes); false if refused or a size is
  /// wrong.
  func x25519PublicKey(into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer)
    -> Bool

  /// ``x25519(secret:publicKey:)`` into `out` (32 bytes); false for an all-zero shared
  /// secret (a low-order point) or a wrong size.
  func x25519(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
    publicKey: UnsafeRawBufferPointer
  ) -> Bool

  /// ``xaeadOpen(key:nonce:ad:sealed:)`` into `out`, which has room for exactly the
  /// plaintext (`sealed` less the tag); false if it does not open or a size is wrong.
  func xaeadOpen(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
  ) -> Bool

  /// ``base64URLDecode(_:)`` into `out`: the number of bytes decoded, or nil if `text` is
  /// not base64url without padding or its bytes do not fit in `out`.
  func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
    -> Int?

  /// ``constantTimeEqual(_:_:)`` of bytes the caller holds.
  func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool
}

extension SessionCrypto {
  // The calls into the caller's buffer, through the array calls, for a seam that has only
  // those (a test's stand-in): the same bytes, one copy more.

  public func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool {
    let hash = blake2b(
      length: out.count, input: Array(input)[...], key: Array(key)[...], salt: Array(salt),
      personal: Array(personal))
    guard hash.count == out.count else { return false }
    out.copyBytes(from: hash)
    return true
  }

  public func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool {
    let sealed = aeadSeal(
      key: Array(key), nonce: Array(nonce), ad: Array(ad)[...], plaintext: Array(plaintext)[...])
    guard sealed.count == out.count else { return false }
    out.copyBytes(from: sealed)
    return true
  }

  public func cipher(keyBytes: KeyBytes) -> Cipher? { cipher(key: keyBytes.bytes) }

  public func randomBytes(into out: UnsafeMutableRawBufferPointer) {
    out.copyBytes(from: randomBytes(count: out.count))
  }

  public func x25519PublicKey(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer
  ) -> Bool {
    guard let key = x25519PublicKey(secret: Array(secret)), key.count == out.count else {
      return false
    }
    out.copyBytes(from: key)
    return true
  }

  public func x25519(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
    publicKey: UnsafeRawBufferPointer
  ) -> Bool {
    guard var shared = x25519(secret: Array(secret), publicKey: Array(publicKey)[...]) else {
      return false
    }
    defer { wipe(&shared) }
    guard shared.count == out.count else { return false }
    out.copyBytes(from: shared)
    return true
  }

  public func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    var copy = [UInt8](repeating: 0, count: bytes.count)
    wipe(&copy)
    bytes.copyBytes(from: copy)
  }

  public func xaeadOpen(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
  ) -> Bool {
    guard
      var plaintext = xaeadOpen(
        key: Array(key), nonce: Array(nonce), ad: Array(ad)[...], sealed: Array(sealed)[...])
    else { return false }
    defer { wipe(&plaintext) }
    guard plaintext.count == out.count else { return false }
    out.copyBytes(from: plaintext)
    return true
  }

  public func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
    -> Int?
  {
    guard var decoded = base64URLDecode(Array(text)[...]) else { return nil }
    defer { wipe(&decoded) }
    guard decoded.count <= out.count else { return nil }
    out.copyBytes(from: decoded)
    return decoded.count
  }

  public func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    constantTimeEqual(Array(a)[...], Array(b)[...])
  }
}
