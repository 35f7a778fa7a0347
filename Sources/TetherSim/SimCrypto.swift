// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge
import TetherSodium

/// The crypto seam a ``World`` hands its edge and every client: libsodium's primitives, the
/// world's one seeded random stream (``SeededCrypto``: a run stays a function of its seed,
/// and the stream goes on across an edge restart, so a restarted edge draws a new ticket
/// key and new ephemeral keys), and a ``NonceOracle`` that sees every seal. Copies share
/// the stream and the oracle (both are references), so the edge and the devices of one
/// world draw from one stream and are watched by one oracle.
public struct SimCrypto: SodiumBackedCrypto {
  public typealias Cipher = SimCipher

  public let seeded: SeededCrypto
  public let oracle: NonceOracle
  public let sodium = SodiumCrypto()

  public init(seed: UInt64) {
    seeded = SeededCrypto(runSeed: seed)
    oracle = NonceOracle()
  }

  public func randomBytes(count: Int) -> [UInt8] { seeded.randomBytes(count: count) }

  public func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
    sodium.x25519PublicKey(secret: secret)
  }

  public func aeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    oracle.sealing(key: key[...], nonce: nonce[...], ad: ad, plaintext: plaintext, kind: .aead)
    return sodium.aeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  public func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool {
    oracle.sealing(
      key: Array(key)[...], nonce: Array(nonce)[...], ad: Array(ad)[...],
      plaintext: Array(plaintext)[...], kind: .aead)
    return sodium.aeadSeal(into: out, key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  public func xaeadSeal(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    oracle.sealing(key: key[...], nonce: nonce[...], ad: ad, plaintext: plaintext, kind: .xaead)
    return sodium.xaeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
  }

  public func cipher(key: [UInt8]) -> SimCipher? {
    sodium.cipher(key: key).map { SimCipher(base: $0, key: key, oracle: oracle) }
  }

  public func cipher(keyBytes: KeyBytes) -> SimCipher? {
    cipher(key: keyBytes.withUnsafeBytes { Array($0) })
  }

}

/// One direction's data key, as libsodium's, with every seal shown to the world's oracle
/// (the key and the counter's nonce), and each sealed datagram's payload kept in the
/// oracle's journal until the world reads it (``NonceOracle/payload(of:)``).
public struct SimCipher: DatagramCipher {
  public static var tagLength: Int { SodiumDatagramCipher.tagLength }
  let base: SodiumDatagramCipher
  let key: [UInt8]
  let oracle: NonceOracle

  public func seal(
    counter: UInt64, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8],
    adStart: Int
  ) -> Bool {
    oracle.sealing(
      key: key[...], nonce: Self.nonce(counter: counter)[...], ad: out[adStart...],
      plaintext: plaintext, kind: .data)
    guard base.seal(counter: counter, plaintext: plaintext, appendingTo: &out, adStart: adStart)
    else { return false }
    oracle.journal[Array(out[adStart...])] = Array(plaintext)
    return true
  }

  public func open(
    counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    base.open(counter: counter, ad: ad, sealed: sealed, into: &out)
  }
}

/// Every (key, nonce) sealed in one world, and every pair sealed twice: a nonce reused under
/// one key is the one mistake an AEAD does not survive (ChaCha20-Poly1305 leaks the XOR of
/// the plaintexts and the Poly1305 key), so the simulation fails the run on it, across
/// restarts, renewals, replayed handshakes and repeated notices.
///
/// One exception, counted apart (``recomputed``): the same (key, nonce) over the same
/// associated data and plaintext. That is a tag computed again to check one (the edge
/// checks a CONFIRM's tag, the device a RESPONSE's, by sealing the empty message as the
/// sender did), or the same datagram made again: the output is the same bytes, so nothing
/// new is revealed. A pair that seals a *different* message is a repeat.
///
/// Pairs are kept as 128-bit digests (BLAKE2b) of key and nonce, each with the digest of
/// what it sealed, so memory grows with the seals of one scenario only (a world, and its
/// oracle, last one scenario).
public final class NonceOracle: @unchecked Sendable {
  /// Which seal: a data key's counter nonce, a one-time handshake key's (zero nonce, or a
  /// ticket's session id), an XChaCha20 seal's random nonce.
  public enum Kind: String, Sendable { case data, aead, xaead }

  /// Per (key, nonce): what it sealed.
  private var seen: [Pair: Pair] = [:]
  /// How many seals it saw, how many were a tag computed again (the same message), and the
  /// repeats (kind and nonce), in order.
  public private(set) var seals: UInt64 = 0
  public private(set) var recomputed: UInt64 = 0
  public private(set) var repeats: [(kind: Kind, nonce: [UInt8])] = []
  /// Each data seal's datagram (header, ciphertext, tag) and its payload, until taken: the
  /// world reads what a sealed datagram says without holding its keys.
  var journal: [[UInt8]: [UInt8]] = [:]
  private let sodium = SodiumCrypto()

  struct Pair: Hashable {
    let a: UInt64
    let b: UInt64
  }

  public init() {}

  /// A seal of `kind` of `plaintext` with `ad` under `key` with `nonce` is about to happen.
  public func sealing(
    key: ArraySlice<UInt8>, nonce: ArraySlice<UInt8>, ad: ArraySlice<UInt8>,
    plaintext: ArraySlice<UInt8>, kind: Kind
  ) {
    seals &+= 1
    let pair = digest(nonce, key: key, personal: "tether sim nonce")
    // The length of `ad` first, so no two (ad, plaintext) make one input.
    let length = (0..<8).map { UInt8(truncatingIfNeeded: ad.count >> (8 * $0)) }
    let message = digest((length + ad + plaintext)[...], key: [], personal: "tether sim seals")
    guard let earlier = seen.updateValue(message, forKey: pair) else { return }
    if earlier == message {
      recomputed &+= 1
    } else {
      repeats.append((kind, Array(nonce)))
    }
  }

  private func digest(_ input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, personal: String)
    -> Pair
  {
    let bytes = sodium.blake2b(
      length: 16, input: input, key: key, salt: [UInt8](repeating: 0, count: 16),
      personal: Array(personal.utf8))
    var a: UInt64 = 0
    var b: UInt64 = 0
    for i in 0..<8 {
      a = a << 8 | UInt64(bytes[i])
      b = b << 8 | UInt64(bytes[8 + i])
    }
    return Pair(a: a, b: b)
  }

  /// The payload of a data datagram sealed since the journal was last cleared, if it was.
  public func payload(of datagram: ArraySlice<UInt8>) -> [UInt8]? { journal[Array(datagram)] }

  /// Forgets the journal (the world reads each step's datagrams right after the step).
  public func clearJournal() { journal.removeAll(keepingCapacity: true) }
}
