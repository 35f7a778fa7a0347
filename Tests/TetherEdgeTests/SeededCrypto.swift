// SPDX-License-Identifier: Apache-2.0
import CSodium
import TetherCore
import TetherSodium

/// ``SessionCrypto`` on libsodium whose random bytes come from a seed, as the vectors'
/// (scripts/test/v2-vectors.py): the bytes of `randombytes_buf_deterministic(size, seed)`,
/// taken in order from the start, draw after draw. Everything else is ``SodiumCrypto``'s.
///
/// The stream lives in a shared reference, as the seam asks: copies of one value draw from
/// one stream and never repeat each other's bytes.
struct SeededCrypto: SessionCrypto {
  typealias Cipher = SodiumDatagramCipher

  /// The draws so far, shared by every copy.
  final class Stream: @unchecked Sendable {
    let seed: [UInt8]
    var offset = 0
    /// Bytes given before the seeded ones (a test's scripted draws), each draw from the
    /// front while enough are left.
    var scripted: [UInt8]
    init(seed: [UInt8], scripted: [UInt8]) {
      self.seed = seed
      self.scripted = scripted
    }
  }

  let stream: Stream
  private let sodium = SodiumCrypto()

  /// The stream of a 32-byte seed of one repeated byte, as the vectors' `seed(n)`, after
  /// the `scripted` bytes.
  init(seedByte: UInt8, scripted: [UInt8] = []) {
    _ = SodiumCrypto.start()
    stream = Stream(seed: [UInt8](repeating: seedByte, count: 32), scripted: scripted)
  }

  /// How many bytes have been drawn.
  var drawn: Int { stream.offset }

  func randomBytes(count: Int) -> [UInt8] {
    if stream.scripted.count >= count {
      defer { stream.scripted.removeFirst(count) }
      return Array(stream.scripted.prefix(count))
    }
    let end = stream.offset + count
    var all = [UInt8](repeating: 0, count: end)
    all.withUnsafeMutableBytes { buffer in
      if let base = buffer.baseAddress {
        randombytes_buf_deterministic(base, buffer.count, stream.seed)
      }
    }
    defer { stream.offset = end }
    return Array(all[stream.offset..<end])
  }

  func x25519PublicKey(secret: [UInt8]) -> [UInt8]? { sodium.x25519PublicKey(secret: secret) }

  func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    sodium.x25519(secret: secret, publicKey: publicKey)
  }

  func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8] {
    sodium.blake2b(length: length, input: input, key: key, salt: salt, personal: personal)
  }

  func aeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  { sodium.aeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext) }

  func aeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  { sodium.aeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed) }

  func xaeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  { sodium.xaeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext) }

  func xaeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  { sodium.xaeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed) }

  func cipher(key: [UInt8]) -> SodiumDatagramCipher? { sodium.cipher(key: key) }

  func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? { sodium.base64URLDecode(text) }

  func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { sodium.base64URLEncode(bytes) }

  func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    sodium.constantTimeEqual(a, b)
  }

  func wipe(_ bytes: inout [UInt8]) { sodium.wipe(&bytes) }
}
