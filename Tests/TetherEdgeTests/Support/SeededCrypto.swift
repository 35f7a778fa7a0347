// SPDX-License-Identifier: Apache-2.0
import CSodium
import TetherCore
import TetherSodium

/// Test-only: ``SodiumCrypto`` whose random bytes come from a seeded stream, the bytes of
/// `randombytes_buf_deterministic(size, seed)` taken in order from the start, draw after
/// draw, as scripts/test/v2-vectors.py's `SeededStream` takes them. Copies of one value
/// share the stream (the seam's rule: random draws are not mutating), so the device and the
/// edge of one test drawing from it draw what the script drew, in the same order.
struct SeededCrypto: SessionCrypto {
  typealias Cipher = SodiumDatagramCipher

  /// Where the next draw starts; shared by every copy.
  final class Stream: @unchecked Sendable {
    let seed: [UInt8]
    var offset = 0
    /// Bytes given before the seeded ones (a test's scripted draws), each draw from the
    /// front while enough are left.
    var scripted: [UInt8]
    /// Draws still to come one byte short (a broken source), before any other.
    var shortDraws = 0
    init(seed: [UInt8], scripted: [UInt8]) {
      self.seed = seed
      self.scripted = scripted
    }
  }

  let stream: Stream
  private let sodium = SodiumCrypto()
  /// If set, every public key this seam makes is this (a low-order point, for a test).
  var publicKeyOverride: [UInt8]?

  /// The stream of the seed that is `byte` 32 times (the script's `seed(n)`), after the
  /// `scripted` bytes.
  init(seed byte: UInt8, scripted: [UInt8] = []) {
    _ = SodiumCrypto.start()  // idempotent; SodiumCryptoTests checks that it starts
    stream = Stream(seed: [UInt8](repeating: byte, count: 32), scripted: scripted)
  }

  /// How many seeded bytes have been drawn.
  var drawn: Int { stream.offset }

  /// The first `count` bytes of the stream of `byte`, without drawing from any value.
  static func prefix(_ count: Int, seed byte: UInt8) -> [UInt8] {
    prefix(count, seed: [UInt8](repeating: byte, count: 32))
  }

  private static func prefix(_ count: Int, seed: [UInt8]) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    randombytes_buf_deterministic(&bytes, count, seed)
    return bytes
  }

  func randomBytes(count: Int) -> [UInt8] {
    if stream.shortDraws > 0, count > 0 {
      stream.shortDraws -= 1
      return [UInt8](repeating: 0xEE, count: count - 1)
    }
    if stream.scripted.count >= count, count > 0 {
      defer { stream.scripted.removeFirst(count) }
      return Array(stream.scripted.prefix(count))
    }
    let end = stream.offset + count
    defer { stream.offset = end }
    return Array(Self.prefix(end, seed: stream.seed)[stream.offset..<end])
  }

  func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
    publicKeyOverride ?? sodium.x25519PublicKey(secret: secret)
  }

  func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    sodium.x25519(secret: secret, publicKey: publicKey)
  }

  func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8] {
    sodium.blake2b(length: length, input: input, key: key, salt: salt, personal: personal)
  }

  func aeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    sodium.aeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  func aeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    sodium.aeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed)
  }

  func xaeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    sodium.xaeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  func xaeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    sodium.xaeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed)
  }

  func cipher(key: [UInt8]) -> SodiumDatagramCipher? { sodium.cipher(key: key) }

  func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? { sodium.base64URLDecode(text) }

  func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { sodium.base64URLEncode(bytes) }

  func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    sodium.constantTimeEqual(a, b)
  }

  func wipe(_ bytes: inout [UInt8]) { sodium.wipe(&bytes) }
}
