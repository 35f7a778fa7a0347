// SPDX-License-Identifier: Apache-2.0
#if TETHER_NULL_CRYPTO
  /// The null primitives of the `TETHER_NULL_CRYPTO` build of the device library: a
  /// fuzzer's fake server written in C can then answer a handshake and seal datagrams
  /// without cryptography, and the fuzzer reaches the decoders behind them. Never shipped:
  /// `make abi-check` fails if the shipped library carries this build's marker
  /// (`tether_test_null_crypto`).
  ///
  /// - AEAD (both kinds, and the data cipher): the ciphertext is the plaintext and the tag
  ///   16 zero bytes; a sealed text opens only when its last 16 bytes are zero.
  /// - X25519: the public key is the secret itself, and the shared secret of `a` and `B`
  ///   is `a XOR B`, so both sides agree (`a XOR B == b XOR A`); all zeros (a secret equal
  ///   to the peer's public key) is refused, as libsodium refuses a low-order point.
  enum NullCrypto {
    static let tagLength = 16

    static func seal(_ plaintext: ArraySlice<UInt8>) -> [UInt8] {
      var out = [UInt8](plaintext)
      out.append(contentsOf: repeatElement(0, count: tagLength))
      return out
    }

    /// The plaintext of `sealed` if its tag is 16 zero bytes; nil if not.
    static func open(_ sealed: ArraySlice<UInt8>) -> [UInt8]? {
      guard sealed.count >= tagLength else { return nil }
      let tagStart = sealed.endIndex - tagLength
      guard sealed[tagStart...].allSatisfy({ $0 == 0 }) else { return nil }
      return [UInt8](sealed[..<tagStart])
    }

    /// ``open(_:)`` into `out` (exactly the plaintext's size); false if it does not open.
    static func open(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
      -> Bool
    {
      guard let plaintext = open(Array(sealed)[...]), plaintext.count == out.count else {
        return false
      }
      out.copyBytes(from: plaintext)
      return true
    }

    static func publicKey(secret: [UInt8]) -> [UInt8] { secret }

    static func shared(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
      var out = secret
      for (i, byte) in publicKey.enumerated() { out[i] ^= byte }
      return out.allSatisfy({ $0 == 0 }) ? nil : out
    }
  }
#endif
