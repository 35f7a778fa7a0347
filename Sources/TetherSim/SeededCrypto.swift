// SPDX-License-Identifier: Apache-2.0
import CSodium
import TetherCore
import TetherSodium

/// ``SodiumCrypto`` whose random bytes come from a seeded stream, the bytes of
/// `randombytes_buf_deterministic(size, seed)` taken in order from the start, draw after
/// draw, as scripts/test/v2-vectors.py's `SeededStream` takes them. Copies of one value
/// share the stream (the seam's rule: random draws are not mutating), so the device and the
/// edge drawing from one value draw what the script drew, in the same order. For tests and
/// the simulation only: the device library never links this module.
///
/// The stream is ChaCha20 (IETF) under the seed with libsodium's nonce `"LibsodiumDRG"`,
/// which is what `randombytes_buf_deterministic` writes; it is made a block at a time
/// (`crypto_stream_chacha20_ietf_xor_ic` from the block the next draw starts in), so a long
/// run's draws cost what they draw, not the whole prefix again.
public struct SeededCrypto: SodiumBackedCrypto {
  public typealias Cipher = SodiumDatagramCipher

  /// Where the next draw starts; shared by every copy.
  public final class Stream: @unchecked Sendable {
    let seed: [UInt8]
    var offset = 0
    /// Bytes given before the seeded ones (a test's scripted draws), each draw from the
    /// front while enough are left.
    var scripted: [UInt8]
    /// Draws still to come one byte short (a broken source, for a test), before any other.
    public var shortDraws = 0
    init(seed: [UInt8], scripted: [UInt8]) {
      self.seed = seed
      self.scripted = scripted
    }

    /// The next `count` bytes of the seeded stream.
    func draw(_ count: Int) -> [UInt8] {
      let block = 64
      let first = offset / block
      let skip = offset % block
      var bytes = [UInt8](repeating: 0, count: skip + count)
      let nonce: [UInt8] = Array("LibsodiumDRG".utf8)
      _ = crypto_stream_chacha20_ietf_xor_ic(
        &bytes, bytes, UInt64(bytes.count), nonce, UInt32(truncatingIfNeeded: first), seed)
      offset += count
      return Array(bytes[skip...])
    }
  }

  public let stream: Stream
  public let sodium = SodiumCrypto()
  /// If set, every public key this seam makes is this (a low-order point, for a test).
  public var publicKeyOverride: [UInt8]?

  /// The stream of the seed that is `byte` 32 times (the script's `seed(n)`), after the
  /// `scripted` bytes.
  public init(seed byte: UInt8, scripted: [UInt8] = []) {
    self.init(seedBytes: [UInt8](repeating: byte, count: 32), scripted: scripted)
  }

  /// The stream of the seed whose first 8 bytes are `seed` (little-endian), the rest zero:
  /// the simulation's, one per world (named apart from ``init(seed:scripted:)``, whose
  /// seed is one byte repeated, so a literal cannot pick the wrong one).
  public init(runSeed seed: UInt64) {
    let bytes = (0..<32).map { $0 < 8 ? UInt8(truncatingIfNeeded: seed >> (8 * UInt64($0))) : 0 }
    self.init(seedBytes: bytes, scripted: [])
  }

  private init(seedBytes: [UInt8], scripted: [UInt8]) {
    _ = SodiumCrypto.start()  // idempotent; SodiumCryptoTests checks that it starts
    stream = Stream(seed: seedBytes, scripted: scripted)
  }

  /// How many seeded bytes have been drawn.
  public var drawn: Int { stream.offset }

  /// The first `count` bytes of the stream of `byte`, without drawing from any value.
  public static func prefix(_ count: Int, seed byte: UInt8) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    randombytes_buf_deterministic(&bytes, count, [UInt8](repeating: byte, count: 32))
    return bytes
  }

  public func randomBytes(count: Int) -> [UInt8] {
    if stream.shortDraws > 0, count > 0 {
      stream.shortDraws -= 1
      return [UInt8](repeating: 0xEE, count: count - 1)
    }
    if stream.scripted.count >= count, count > 0 {
      defer { stream.scripted.removeFirst(count) }
      return Array(stream.scripted.prefix(count))
    }
    return stream.draw(count)
  }

  public func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
    publicKeyOverride ?? sodium.x25519PublicKey(secret: secret)
  }

  public func aeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    sodium.aeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  public func xaeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    sodium.xaeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  public func cipher(key: [UInt8]) -> SodiumDatagramCipher? { sodium.cipher(key: key) }

}
