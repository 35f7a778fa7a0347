// SPDX-License-Identifier: Apache-2.0
// Only in the targets built with -D TETHER_NULL_CRYPTO (fuzz-decode, fuzz-link), which
// compile the null primitives in (scripts/test/fuzz.sh).
#if TETHER_NULL_CRYPTO
  import TetherCore
  import TetherSodium

  /// The crypto seam of fuzz-decode and fuzz-link: the null AEADs and the null X25519 of the
  /// `TETHER_NULL_CRYPTO` build (`Sources/TetherSodium/NullCrypto.swift`, compiled into the
  /// fuzz binary with `-D TETHER_NULL_CRYPTO`, never into anything shipped), so that bytes the
  /// mutator wrote still open: a sealed text opens when its last 16 bytes are zero, and a
  /// RESPONSE carrying any public key completes the handshake. BLAKE2b, base64url, the
  /// comparison and the wipe are libsodium's (``SodiumCrypto``, the shipped build): the key
  /// schedule runs as devices run it, only the primitives that would stop a mutation are null.
  ///
  /// Random bytes come from a SplitMix64 stream seeded by the input (``NullRandom``), so every
  /// INIT's `N_d` and ephemeral key are a function of the input and a seed can answer them.
  struct NullSeam: SessionCrypto {
    typealias Cipher = NullCipher

    let random: NullRandom
    let sodium = SodiumCrypto()

    init(random: NullRandom) { self.random = random }

    func randomBytes(count: Int) -> [UInt8] { random.draw(max(count, 0)) }

    func randomBytes(into out: UnsafeMutableRawBufferPointer) {
      out.copyBytes(from: random.draw(out.count))
    }

    func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
      secret.count == 32 ? NullCrypto.publicKey(secret: secret) : nil
    }

    func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
      secret.count == 32 && publicKey.count == 32
        ? NullCrypto.shared(secret: secret, publicKey: publicKey) : nil
    }

    func blake2b(
      length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
      personal: [UInt8]
    ) -> [UInt8] {
      sodium.blake2b(length: length, input: input, key: key, salt: salt, personal: personal)
    }

    func blake2b(
      into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
      key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
    ) -> Bool {
      sodium.blake2b(into: out, input: input, key: key, salt: salt, personal: personal)
    }

    // Both AEADs: the key and nonce sizes are checked as libsodium's are, then the null seal.
    func aeadSeal(
      key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
    ) -> [UInt8] {
      key.count == 32 && nonce.count == 12 ? NullCrypto.seal(plaintext) : []
    }

    func aeadOpen(
      key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
    ) -> [UInt8]? {
      key.count == 32 && nonce.count == 12 ? NullCrypto.open(sealed) : nil
    }

    func xaeadSeal(
      key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
    ) -> [UInt8] {
      key.count == 32 && nonce.count == 24 ? NullCrypto.seal(plaintext) : []
    }

    func xaeadOpen(
      key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
    ) -> [UInt8]? {
      key.count == 32 && nonce.count == 24 ? NullCrypto.open(sealed) : nil
    }

    func cipher(key: [UInt8]) -> NullCipher? { key.count == 32 ? NullCipher() : nil }

    func cipher(keyBytes: KeyBytes) -> NullCipher? { NullCipher() }

    func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? { sodium.base64URLDecode(text) }

    func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
      -> Int?
    {
      sodium.base64URLDecode(into: out, text: text)
    }

    func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { sodium.base64URLEncode(bytes) }

    func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
      sodium.constantTimeEqual(a, b)
    }

    func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
      sodium.constantTimeEqual(a, b)
    }

    func wipe(_ bytes: inout [UInt8]) { sodium.wipe(&bytes) }

    func wipe(_ bytes: UnsafeMutableRawBufferPointer) { sodium.wipe(bytes) }
  }

  /// The null data cipher: the ciphertext is the plaintext and the tag 16 zero bytes
  /// (``NullCrypto``), whatever the key and the counter.
  struct NullCipher: DatagramCipher {
    static var tagLength: Int { NullCrypto.tagLength }

    func seal(
      counter: UInt64, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8], adStart: Int
    ) -> Bool {
      out += NullCrypto.seal(plaintext)
      return true
    }

    func open(
      counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
    ) -> Bool {
      guard let plaintext = NullCrypto.open(sealed) else { return false }
      out += plaintext
      return true
    }

    func seal(counter: UInt64, inPlace datagram: UnsafeMutableRawBufferPointer, adCount: Int)
      -> Bool
    {
      guard adCount >= 0, datagram.count - adCount >= Self.tagLength else { return false }
      for index in (datagram.count - Self.tagLength)..<datagram.count { datagram[index] = 0 }
      return true
    }

    func open(
      counter: UInt64, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
      into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
      NullCrypto.open(sealed, into: out)
    }
  }

  /// The seam's random stream, shared by every copy of the seam (the seam's rule: a draw is
  /// not mutating). Its state can be read and set, so that a step can be run twice from the
  /// same stream (fuzz-link's twin).
  final class NullRandom {
    var generator: SeededRandom

    init(seed: UInt64) { generator = SeededRandom(seed: seed) }

    func draw(_ count: Int) -> [UInt8] {
      var bytes: [UInt8] = []
      bytes.reserveCapacity(count)
      while bytes.count < count {
        let word = generator.next()
        for shift in stride(from: 0, to: 64, by: 8) where bytes.count < count {
          bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
        }
      }
      return bytes
    }
  }
#endif
