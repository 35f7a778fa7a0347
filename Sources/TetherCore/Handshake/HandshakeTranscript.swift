// SPDX-License-Identifier: Apache-2.0
/// docs/PROTOCOL.md §12.5's transcript and key schedule, one implementation for both sides:
/// the device runs it to write its INIT and check the RESPONSE, the edge to open the INIT
/// and write the RESPONSE, so the two cannot drift apart. `hash` is the transcript hash
/// `h`, `chainingKey` the chaining key `ck`; every step replaces them, and a chaining key
/// that is replaced is wiped through the seam.
///
/// Every derivation is keyed BLAKE2b with salt and personalization (§12.1): `HASH` unkeyed
/// with the label "tether2 hash", `PRF(k, x, L)` keyed with `k`, each purpose its own label,
/// so no value serves two of them.
///
/// Its steps are kept out of line (`@inline(never)`): the device calls each from several
/// places, and inlined into them they cost the aarch64 library over a kilobyte of copies
/// and reference counting (an Embedded probe of the device side, docs/PROTOCOL.md §12.16,
/// step 5).
struct HandshakeTranscript<Crypto: SessionCrypto> {
  let crypto: Crypto
  // Inline, not arrays: every step writes its new value in place through the seam, with
  // no array made and no reference counted (`make v2-size`, §12.16).
  private(set) var h: KeyBytes
  private(set) var ck: KeyBytes

  /// The transcript hash `h`, as bytes.
  var hash: [UInt8] { h.bytes }
  /// The chaining key `ck`, as bytes (a secret: the caller wipes its copy).
  var chainingKey: [UInt8] { ck.bytes }

  /// Step 1: `h = HASH("Tether v2 NNpsk0 X25519 ChaChaPoly BLAKE2b")`, `ck = h`. The
  /// protocol's name is hashed first so that a transcript of another protocol (or of a
  /// later version of this one) never shares a value with this one. The hash is a constant,
  /// written out (a call and the name's bytes less in the device library); the independent
  /// vectors (scripts/test/v2-vectors.py) compute it from the name, so it cannot be wrong
  /// without every vector failing.
  init(crypto: Crypto) {
    self.crypto = crypto
    h = KeyBytes(
      bigEndian: 0xD2C4_EE6F_70F5_A587, 0x94E4_3B02_8841_00AC, 0xB99F_C257_BE32_3C23,
      0x32BE_5AE8_EAC2_4CA5)
    ck = h
  }

  /// A transcript resumed where it stood (an attempt's `h2` and `ck_e`, 32 bytes each).
  init(crypto: Crypto, hash: ArraySlice<UInt8>, chainingKey: ArraySlice<UInt8>) {
    self.init(crypto: crypto, hash: KeyBytes(hash), chainingKey: KeyBytes(chainingKey))
  }

  /// A transcript resumed where it stood, from values held inline.
  init(crypto: Crypto, hash: KeyBytes, chainingKey: KeyBytes) {
    self.crypto = crypto
    h = hash
    ck = chainingKey
  }

  /// Calls `body` with `h`'s and `ck`'s bytes where they are (mutating only to read them
  /// in place: ``KeyBytes/withBytesInPlace(_:)``).
  mutating func withKeys<R>(
    _ body: (_ hash: UnsafeRawBufferPointer, _ chainingKey: UnsafeRawBufferPointer) -> R
  ) -> R {
    h.withBytesInPlace { hash in ck.withBytesInPlace { body(hash, $0) } }
  }

  /// `h = HASH(h ‖ data)`. `h ‖ data` is put together on the stack: every `data` the
  /// schedule mixes is at most 224 bytes (`W`, 219, is the longest); a longer one leaves
  /// `h` as it was, and so no handshake completes (never with §12.5's layouts).
  @inline(never)
  mutating func mixHash(_ data: UnsafeRawBufferPointer) {
    var input = InlineBytes()
    let crypto = crypto
    input.withUnsafeMutableBytes { input in
      guard h.withBytesInPlace({ copy($0, into: input, at: 0) }),
        copy(data, into: input, at: KeyBytes.count)
      else { return }
      h.withUnsafeMutableBytes { out in
        _ = crypto.derive(
          into: out, key: UnsafeRawBufferPointer(start: nil, count: 0),
          input: UnsafeRawBufferPointer(piece(input, 0, KeyBytes.count + data.count)),
          label: "tether2 hash")
      }
    }
  }

  /// ``mixHash(_:)`` of bytes in an array (the edge's).
  mutating func mixHash(_ data: ArraySlice<UInt8>) {
    data.withUnsafeBytes { mixHash($0) }
  }

  /// `ck = PRF(ck, data, "tether2 ck")`; the previous chaining key is wiped.
  @inline(never)
  mutating func mixKey(_ data: UnsafeRawBufferPointer) {
    var previous = ck
    let crypto = crypto
    ck.withUnsafeMutableBytes { out in
      previous.withBytesInPlace { key in
        _ = crypto.derive(into: out, key: key, input: data, label: "tether2 ck")
      }
    }
    previous.withUnsafeMutableBytes { crypto.wipe($0) }
  }

  /// `PRF(ck, "", label)` into `out` (32 bytes): a key of this point of the schedule.
  @inline(never)
  mutating func key(_ label: StaticString, into out: UnsafeMutableRawBufferPointer) -> Bool {
    let crypto = crypto
    return ck.withBytesInPlace {
      crypto.derive(
        into: out, key: $0, input: UnsafeRawBufferPointer(start: nil, count: 0), label: label)
    }
  }

  /// ``key(_:into:)`` as an array (the edge's); empty if it could not be made.
  func key(_ label: StaticString) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: KeyBytes.count)
    var transcript = self
    defer { transcript.wipe() }
    let done = out.withUnsafeMutableBytes { transcript.key(label, into: $0) }
    return done ? out : []
  }

  /// Steps 2 to 5 (the INIT up to `e_d`): afterwards `hash` is `h1` and `chainingKey` is
  /// `ck_e`, the point where `k_req`, `k_refuse` and `k_cookie` are taken. `prefix` is the
  /// INIT's first 18 bytes (kind, version, `N_d`), `token` its `W`.
  @inline(never)
  mutating func mixInitiation(
    prefix: UnsafeRawBufferPointer, token: UnsafeRawBufferPointer,
    deviceSecret: UnsafeRawBufferPointer, ephemeral: UnsafeRawBufferPointer
  ) {
    mixHash(prefix)
    mixHash(token)
    mixKey(deviceSecret)
    mixHash(ephemeral)
    mixKey(ephemeral)
  }

  /// ``mixInitiation(prefix:token:deviceSecret:ephemeral:)`` of arrays (the edge's).
  mutating func mixInitiation(
    prefix: ArraySlice<UInt8>, token: ArraySlice<UInt8>, deviceSecret: [UInt8],
    ephemeral: ArraySlice<UInt8>
  ) {
    prefix.withUnsafeBytes { prefix in
      token.withUnsafeBytes { token in
        deviceSecret.withUnsafeBytes { secret in
          ephemeral.withUnsafeBytes {
            mixInitiation(prefix: prefix, token: token, deviceSecret: secret, ephemeral: $0)
          }
        }
      }
    }
  }

  /// Steps 7 to 9 (the RESPONSE up to its ticket), from `h2` and `ck_e`: writes the session
  /// secret `S` into `secret` (32 bytes). `header` is the RESPONSE's first 45 bytes,
  /// `sharedSecret` the DH of the two ephemeral keys (the caller wipes it). `S` is taken
  /// before the ticket is mixed in because the ticket carries `S`, sealed for the edge: the
  /// edge needs `S` to make it. False if a size is wrong.
  @inline(never)
  mutating func mixResponseKeys(
    header: UnsafeRawBufferPointer, ephemeral: UnsafeRawBufferPointer,
    sharedSecret: UnsafeRawBufferPointer, into secret: UnsafeMutableRawBufferPointer
  ) -> Bool {
    mixHash(header)
    mixHash(ephemeral)
    mixKey(ephemeral)
    mixKey(sharedSecret)
    let crypto = crypto
    return withKeys { hash, key in
      crypto.derive(into: secret, key: key, input: hash, label: "tether2 session")
    }
  }

  /// ``mixResponseKeys(header:ephemeral:sharedSecret:into:)`` of arrays (the edge's):
  /// `sharedSecret` is wiped; `S` is returned (empty if it could not be made).
  mutating func mixResponseKeys(
    header: ArraySlice<UInt8>, ephemeral: ArraySlice<UInt8>, sharedSecret: inout [UInt8]
  ) -> [UInt8] {
    var secret = [UInt8](repeating: 0, count: KeyBytes.count)
    let done = secret.withUnsafeMutableBytes { out in
      header.withUnsafeBytes { header in
        ephemeral.withUnsafeBytes { ephemeral in
          sharedSecret.withUnsafeBytes {
            mixResponseKeys(header: header, ephemeral: ephemeral, sharedSecret: $0, into: out)
          }
        }
      }
    }
    crypto.wipe(&sharedSecret)
    return done ? secret : []
  }

  /// Steps 10 and 11: mixes the ticket in and writes the RESPONSE's tag,
  /// `AEAD(k_resp, 0^12, ad = h, empty)`, which covers the whole RESPONSE, into `tag` (16
  /// bytes). The chaining key is wiped: the handshake needs it no more.
  @inline(never)
  mutating func mixTicket(_ ticket: UnsafeRawBufferPointer, tag: UnsafeMutableRawBufferPointer)
    -> Bool
  {
    mixHash(ticket)
    defer { wipe() }
    let crypto = crypto
    return withKeys { hash, key in
      crypto.sealOnce(
        into: tag, key: key, label: "tether2 resp", ad: hash,
        plaintext: UnsafeRawBufferPointer(start: nil, count: 0))
    }
  }

  /// ``mixTicket(_:tag:)`` of an array (the edge's): the tag, empty if it could not be made.
  mutating func mixTicket(_ ticket: ArraySlice<UInt8>) -> [UInt8] {
    var tag = [UInt8](repeating: 0, count: 16)
    let done = tag.withUnsafeMutableBytes { out in
      ticket.withUnsafeBytes { mixTicket($0, tag: out) }
    }
    return done ? tag : []
  }

  /// Wipes the chaining key (the transcript hash is public).
  @inline(never)
  mutating func wipe() {
    let crypto = crypto
    ck.withUnsafeMutableBytes { crypto.wipe($0) }
  }
}

extension SessionCrypto {
  /// `PRF(key, input, label)` of §12.1, `length` bytes (32, or 16 for `PRF16`); with an
  /// empty key, the unkeyed hash (`HASH` is this with the label "tether2 hash"). Public so
  /// the edge's own keyed values (cookies, `mac2`, reset values) are this one function too.
  /// Empty if a size is wrong.
  @inline(never)
  public func derive(
    key: [UInt8] = [], input: ArraySlice<UInt8>, label: StaticString, length: Int = 32
  ) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: length)
    let done = out.withUnsafeMutableBytes { out in
      key.withUnsafeBytes { key in
        input.withUnsafeBytes { input in derive(into: out, key: key, input: input, label: label) }
      }
    }
    return done ? out : []
  }

  /// `PRF(key, input, label)` into `out` (its size is the length): the salt (zeros) and the
  /// label, zero-padded to 16 bytes, on the stack. False if a size is wrong (a label is at
  /// most 16 bytes).
  @inline(never)
  func derive(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer,
    input: UnsafeRawBufferPointer, label: StaticString
  ) -> Bool {
    var personal: (UInt64, UInt64) = (0, 0)
    let salt: (UInt64, UInt64) = (0, 0)
    guard label.utf8CodeUnitCount <= 16 else { return false }
    withUnsafeMutableBytes(of: &personal) { personal in
      label.withUTF8Buffer { personal.copyBytes(from: $0) }
    }
    return withUnsafeBytes(of: salt) { salt in
      withUnsafeBytes(of: personal) { personal in
        blake2b(into: out, input: input, key: key, salt: salt, personal: personal)
      }
    }
  }

  /// `AEAD(PRF(key, "", label), 0^12, ad, plaintext)`, the derived key (on the stack)
  /// wiped: each seal of the handshake under a key it uses once (`k_req`, `k_resp`,
  /// `k_confirm`), which is why the nonce can be zeros. Empty if a size is wrong.
  func sealOnce(
    key: [UInt8], label: StaticString, ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    key.withUnsafeBytes { key in
      ad.withUnsafeBytes { ad in
        plaintext.withUnsafeBytes { sealOnce(key: key, label: label, ad: ad, plaintext: $0) }
      }
    }
  }

  /// ``sealOnce(key:label:ad:plaintext:)`` of bytes the caller holds.
  func sealOnce(
    key: UnsafeRawBufferPointer, label: StaticString, ad: UnsafeRawBufferPointer,
    plaintext: UnsafeRawBufferPointer
  ) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: plaintext.count + 16)
    let done = out.withUnsafeMutableBytes {
      sealOnce(into: $0, key: key, label: label, ad: ad, plaintext: plaintext)
    }
    return done ? out : []
  }

  /// ``sealOnce(key:label:ad:plaintext:)`` into `out`, which has room for exactly the
  /// ciphertext and the tag; false if a size is wrong.
  @inline(never)
  func sealOnce(
    into out: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer, label: StaticString,
    ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
  ) -> Bool {
    var once = KeyBytes()
    let nonce: (UInt64, UInt32) = (0, 0)  // 12 bytes
    return once.withUnsafeMutableBytes { once in
      defer { wipe(once) }
      return derive(
        into: once, key: key, input: UnsafeRawBufferPointer(start: nil, count: 0), label: label)
        && withUnsafeBytes(of: nonce) { nonce in
          aeadSeal(
            into: out, key: UnsafeRawBufferPointer(once), nonce: nonce, ad: ad,
            plaintext: plaintext)
        }
    }
  }

  /// Opens what ``sealOnce(key:label:ad:plaintext:)`` sealed; nil if it does not open.
  func openOnce(
    key: [UInt8], label: StaticString, ad: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>
  ) -> [UInt8]? {
    var once = derive(key: key, input: [], label: label)
    defer { wipe(&once) }
    return aeadOpen(key: once, nonce: [UInt8](repeating: 0, count: 12), ad: ad, sealed: sealed)
  }
}
