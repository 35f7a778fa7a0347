// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSodium

/// What ``WipeRecordingCrypto`` saw: the bytes of every buffer it was asked to wipe, as they
/// were before the wipe.
final class WipeLog {
  var wiped: [[UInt8]] = []

  /// Whether one wiped buffer held all of `parts`, each somewhere in it.
  func wipedOne(holding parts: [[UInt8]]) -> Bool {
    wiped.contains { buffer in parts.allSatisfy { buffer.contains(subsequence: $0) } }
  }
}

/// libsodium, with every wipe recorded before it is done: a test asks which bytes a layer
/// wiped where it holds them. Everything else is ``SodiumCrypto``'s own call.
struct WipeRecordingCrypto: SessionCrypto {
  let log: WipeLog
  let sodium = SodiumCrypto()

  func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    log.wiped.append(Array(bytes))
    sodium.wipe(bytes)
  }

  func wipe(_ bytes: inout [UInt8]) {
    log.wiped.append(bytes)
    sodium.wipe(&bytes)
  }

  func randomBytes(count: Int) -> [UInt8] { sodium.randomBytes(count: count) }
  func randomBytes(into out: UnsafeMutableRawBufferPointer) { sodium.randomBytes(into: out) }
  func x25519PublicKey(secret: [UInt8]) -> [UInt8]? { sodium.x25519PublicKey(secret: secret) }
  func x25519PublicKey(into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer)
    -> Bool
  { sodium.x25519PublicKey(into: out, secret: secret) }
  func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    sodium.x25519(secret: secret, publicKey: publicKey)
  }
  func x25519(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
    publicKey: UnsafeRawBufferPointer
  ) -> Bool { sodium.x25519(into: out, secret: secret, publicKey: publicKey) }
  func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8] {
    sodium.blake2b(length: length, input: input, key: key, salt: salt, personal: personal)
  }
  func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool { sodium.blake2b(into: out, input: input, key: key, salt: salt, personal: personal) }
  func aeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  { sodium.aeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext) }
  func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool { sodium.aeadSeal(into: out, key: key, nonce: nonce, ad: ad, plaintext: plaintext) }
  func aeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  { sodium.aeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed) }
  func xaeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  { sodium.xaeadSeal(key: key, nonce: nonce, ad: ad, plaintext: plaintext) }
  func xaeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  { sodium.xaeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed) }
  func xaeadOpen(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
  ) -> Bool { sodium.xaeadOpen(into: out, key: key, nonce: nonce, ad: ad, sealed: sealed) }
  func cipher(key: [UInt8]) -> SodiumDatagramCipher? { sodium.cipher(key: key) }
  func cipher(keyBytes: KeyBytes) -> SodiumDatagramCipher? { sodium.cipher(keyBytes: keyBytes) }
  func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? { sodium.base64URLDecode(text) }
  func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
    -> Int?
  { sodium.base64URLDecode(into: out, text: text) }
  func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { sodium.base64URLEncode(bytes) }
  func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    sodium.constantTimeEqual(a, b)
  }
  func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    sodium.constantTimeEqual(a, b)
  }
}

extension Array where Element == UInt8 {
  /// Whether `part` occurs in these bytes, in order and contiguous.
  func contains(subsequence part: [UInt8]) -> Bool {
    guard !part.isEmpty, part.count <= count else { return part.isEmpty }
    return (0...(count - part.count)).contains { self[$0..<($0 + part.count)].elementsEqual(part) }
  }
}
