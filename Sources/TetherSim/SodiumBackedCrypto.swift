// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSodium

/// A crypto seam that is libsodium's (``SodiumCrypto``) for every primitive it does not
/// write itself: the simulation's seams differ only in where random bytes come from
/// (``SeededCrypto``) and in what watches the seals (``SimCrypto``), so the rest is written
/// once, here.
public protocol SodiumBackedCrypto: SessionCrypto {
  var sodium: SodiumCrypto { get }
}

extension SodiumBackedCrypto {
  public func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    sodium.x25519(secret: secret, publicKey: publicKey)
  }

  public func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8],
    personal: [UInt8]
  ) -> [UInt8] {
    sodium.blake2b(length: length, input: input, key: key, salt: salt, personal: personal)
  }

  public func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool {
    sodium.blake2b(into: out, input: input, key: key, salt: salt, personal: personal)
  }

  public func aeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    sodium.aeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed)
  }

  public func xaeadOpen(
    key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    sodium.xaeadOpen(key: key, nonce: nonce, ad: ad, sealed: sealed)
  }

  public func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    sodium.base64URLDecode(text)
  }

  public func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    sodium.base64URLEncode(bytes)
  }

  public func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    sodium.constantTimeEqual(a, b)
  }

  public func wipe(_ bytes: inout [UInt8]) { sodium.wipe(&bytes) }

  public func wipe(_ bytes: UnsafeMutableRawBufferPointer) { sodium.wipe(bytes) }
}
