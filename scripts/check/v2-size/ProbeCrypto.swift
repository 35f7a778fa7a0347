// SPDX-License-Identifier: Apache-2.0
// Stand-in seam: every primitive an extern C function writing into the caller's buffer.
@_extern(c, "probe_random") func probe_random(_ p: UnsafeMutablePointer<UInt8>?, _ n: Int)
@_extern(c, "probe_x25519_base") func probe_x25519_base(
  _ o: UnsafeMutablePointer<UInt8>?, _ s: UnsafePointer<UInt8>?
) -> Int32
@_extern(c, "probe_x25519") func probe_x25519(
  _ o: UnsafeMutablePointer<UInt8>?, _ s: UnsafePointer<UInt8>?, _ p: UnsafePointer<UInt8>?
) -> Int32
@_extern(c, "probe_blake2b") func probe_blake2b(
  _ o: UnsafeMutablePointer<UInt8>?, _ ol: Int, _ i: UnsafePointer<UInt8>?, _ il: Int,
  _ k: UnsafePointer<UInt8>?, _ kl: Int, _ s: UnsafePointer<UInt8>?, _ p: UnsafePointer<UInt8>?
) -> Int32
@_extern(c, "probe_aead") func probe_aead(
  _ x: Int32, _ seal: Int32, _ o: UnsafeMutablePointer<UInt8>?, _ i: UnsafePointer<UInt8>?,
  _ il: Int, _ ad: UnsafePointer<UInt8>?, _ adl: Int, _ n: UnsafePointer<UInt8>?,
  _ k: UnsafePointer<UInt8>?
) -> Int32
@_extern(c, "probe_b64") func probe_b64(
  _ o: UnsafeMutablePointer<UInt8>?, _ ol: Int, _ i: UnsafePointer<UInt8>?, _ il: Int
) -> Int
@_extern(c, "probe_memcmp") func probe_memcmp(
  _ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ n: Int
) -> Int32
@_extern(c, "probe_memzero") func probe_memzero(_ a: UnsafeMutablePointer<UInt8>?, _ n: Int)

func filled(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>?) -> Int32) -> [UInt8]? {
  var out = [UInt8](repeating: 0, count: count)
  let r = out.withUnsafeMutableBufferPointer { body($0.baseAddress) }
  return r == 0 ? out : nil
}

struct ProbeCipher: DatagramCipher {
  static var tagLength: Int { 16 }
  let key: KeyBytes
  func seal(counter: UInt64, inPlace datagram: UnsafeMutableRawBufferPointer, adCount: Int)
    -> Bool
  {
    guard adCount >= 0, datagram.count - adCount >= 16,
      let base = datagram.baseAddress?.assumingMemoryBound(to: UInt8.self)
    else { return false }
    var nonce: (UInt64, UInt64) = (0, counter.bigEndian)
    return withUnsafeBytes(of: &nonce) { n in
      key.withUnsafeBytes { k in
        probe_aead(
          0, 1, base + adCount, base + adCount, datagram.count - adCount - 16, base, adCount,
          n.baseAddress!.assumingMemoryBound(to: UInt8.self) + 4,
          k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
      }
    }
  }
  func open(
    counter: UInt64, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
    into out: UnsafeMutableRawBufferPointer
  ) -> Bool {
    guard out.count + 16 == sealed.count else { return false }
    var nonce: (UInt64, UInt64) = (0, counter.bigEndian)
    return withUnsafeBytes(of: &nonce) { n in
      key.withUnsafeBytes { k in
        probe_aead(
          0, 0, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
          sealed.baseAddress?.assumingMemoryBound(to: UInt8.self), sealed.count,
          ad.baseAddress?.assumingMemoryBound(to: UInt8.self), ad.count,
          n.baseAddress!.assumingMemoryBound(to: UInt8.self) + 4,
          k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
      }
    }
  }
  func seal(
    counter: UInt64, plaintext: ArraySlice<UInt8>, appendingTo out: inout [UInt8], adStart: Int
  ) -> Bool {
    let end = out.count
    out.append(contentsOf: repeatElement(0, count: plaintext.count + 16))
    var nonce: (UInt64, UInt64) = (0, counter.bigEndian)
    let r = withUnsafeBytes(of: &nonce) { n in
      out.withUnsafeMutableBufferPointer { b in
        plaintext.withUnsafeBufferPointer { p in
          key.withUnsafeBytes { k in
            probe_aead(
              0, 1, b.baseAddress! + end, p.baseAddress, p.count, b.baseAddress! + adStart,
              end - adStart, n.baseAddress!.assumingMemoryBound(to: UInt8.self) + 4,
              k.baseAddress!.assumingMemoryBound(to: UInt8.self))
          }
        }
      }
    }
    if r != 0 { out.removeSubrange(end...) }
    return r == 0
  }
  func open(
    counter: UInt64, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, into out: inout [UInt8]
  ) -> Bool {
    let end = out.count
    out.append(contentsOf: repeatElement(0, count: sealed.count - 16))
    var nonce: (UInt64, UInt64) = (0, counter.bigEndian)
    let r = withUnsafeBytes(of: &nonce) { n in
      out.withUnsafeMutableBufferPointer { b in
        sealed.withUnsafeBufferPointer { p in
          ad.withUnsafeBufferPointer { a in
            key.withUnsafeBytes { k in
              probe_aead(
                0, 0, b.baseAddress! + end, p.baseAddress, p.count, a.baseAddress, a.count,
                n.baseAddress!.assumingMemoryBound(to: UInt8.self) + 4,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
          }
        }
      }
    }
    if r != 0 { out.removeSubrange(end...) }
    return r == 0
  }
}

struct ProbeCrypto: SessionCrypto {
  func randomBytes(count: Int) -> [UInt8] {
    filled(count) {
      probe_random($0, count)
      return 0
    } ?? []
  }
  func x25519PublicKey(secret: [UInt8]) -> [UInt8]? {
    filled(32) { o in secret.withUnsafeBufferPointer { probe_x25519_base(o, $0.baseAddress) } }
  }
  func x25519(secret: [UInt8], publicKey: ArraySlice<UInt8>) -> [UInt8]? {
    filled(32) { o in
      secret.withUnsafeBufferPointer { s in
        publicKey.withUnsafeBufferPointer { probe_x25519(o, s.baseAddress, $0.baseAddress) }
      }
    }
  }
  func blake2b(
    length: Int, input: ArraySlice<UInt8>, key: ArraySlice<UInt8>, salt: [UInt8], personal: [UInt8]
  ) -> [UInt8] {
    filled(length) { o in
      input.withUnsafeBufferPointer { i in
        key.withUnsafeBufferPointer { k in
          salt.withUnsafeBufferPointer { s in
            personal.withUnsafeBufferPointer { p in
              probe_blake2b(
                o, length, i.baseAddress, i.count, k.baseAddress, k.count, s.baseAddress,
                p.baseAddress)
            }
          }
        }
      }
    } ?? []
  }
  func aead(
    _ x: Int32, _ seal: Int32, key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>,
    _ input: ArraySlice<UInt8>
  ) -> [UInt8]? {
    let count = seal == 1 ? input.count + 16 : input.count - 16
    guard count >= 0 else { return nil }
    return filled(count) { o in
      input.withUnsafeBufferPointer { i in
        ad.withUnsafeBufferPointer { a in
          nonce.withUnsafeBufferPointer { n in
            key.withUnsafeBufferPointer { k in
              probe_aead(
                x, seal, o, i.baseAddress, i.count, a.baseAddress, a.count, n.baseAddress,
                k.baseAddress)
            }
          }
        }
      }
    }
  }
  func aeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  {
    aead(0, 1, key: key, nonce: nonce, ad: ad, plaintext) ?? []
  }
  func aeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  {
    aead(0, 0, key: key, nonce: nonce, ad: ad, sealed)
  }
  func xaeadSeal(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>)
    -> [UInt8]
  {
    aead(1, 1, key: key, nonce: nonce, ad: ad, plaintext) ?? []
  }
  func xaeadOpen(key: [UInt8], nonce: [UInt8], ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>)
    -> [UInt8]?
  {
    aead(1, 0, key: key, nonce: nonce, ad: ad, sealed)
  }
  func cipher(key: [UInt8]) -> ProbeCipher? { KeyBytes(key).map { ProbeCipher(key: $0) } }
  func base64URLDecode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: text.count)
    let n = out.withUnsafeMutableBufferPointer { o in
      text.withUnsafeBufferPointer { probe_b64(o.baseAddress, o.count, $0.baseAddress, $0.count) }
    }
    guard n >= 0 else { return nil }
    out.removeSubrange(n...)
    return out
  }
  func base64URLEncode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { [] }
  func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    a.count == b.count
      && a.withUnsafeBufferPointer { x in
        b.withUnsafeBufferPointer { probe_memcmp(x.baseAddress, $0.baseAddress, a.count) == 0 }
      }
  }
  func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBufferPointer { probe_memzero($0.baseAddress, $0.count) }
  }

  func blake2b(
    into out: UnsafeMutableRawBufferPointer, input: UnsafeRawBufferPointer,
    key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, personal: UnsafeRawBufferPointer
  ) -> Bool {
    probe_blake2b(
      out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count,
      input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count,
      key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count,
      salt.baseAddress?.assumingMemoryBound(to: UInt8.self),
      personal.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 0
  }
  func aeadSeal(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool {
    probe_aead(
      0, 1, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
      plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), plaintext.count,
      ad.baseAddress?.assumingMemoryBound(to: UInt8.self), ad.count,
      nonce.baseAddress?.assumingMemoryBound(to: UInt8.self),
      key.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 0
  }
  func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    probe_memzero(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
  }
  func cipher(keyBytes: KeyBytes) -> ProbeCipher? { ProbeCipher(key: keyBytes) }
  func randomBytes(into out: UnsafeMutableRawBufferPointer) {
    probe_random(out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count)
  }
  func x25519PublicKey(into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer)
    -> Bool
  {
    probe_x25519_base(
      out.baseAddress?.assumingMemoryBound(to: UInt8.self),
      secret.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 0
  }
  func x25519(
    into out: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
    publicKey: UnsafeRawBufferPointer
  ) -> Bool {
    probe_x25519(
      out.baseAddress?.assumingMemoryBound(to: UInt8.self),
      secret.baseAddress?.assumingMemoryBound(to: UInt8.self),
      publicKey.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 0
  }
  func xaeadOpen(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
  ) -> Bool {
    out.count + 16 == sealed.count
      && probe_aead(
        1, 0, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
        sealed.baseAddress?.assumingMemoryBound(to: UInt8.self), sealed.count,
        ad.baseAddress?.assumingMemoryBound(to: UInt8.self), ad.count,
        nonce.baseAddress?.assumingMemoryBound(to: UInt8.self),
        key.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 0
  }
  func base64URLDecode(into out: UnsafeMutableRawBufferPointer, text: UnsafeRawBufferPointer)
    -> Int?
  {
    let n = probe_b64(
      out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count,
      text.baseAddress?.assumingMemoryBound(to: UInt8.self), text.count)
    return n >= 0 ? n : nil
  }
  func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    a.count == b.count
      && probe_memcmp(
        a.baseAddress?.assumingMemoryBound(to: UInt8.self),
        b.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count) == 0
  }
}
