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
  private(set) var hash: [UInt8]
  private(set) var chainingKey: [UInt8]

  /// Step 1: `h = HASH("Tether v2 NNpsk0 X25519 ChaChaPoly BLAKE2b")`, `ck = h`. The
  /// protocol's name is hashed first so that a transcript of another protocol (or of a
  /// later version of this one) never shares a value with this one. The hash is a constant,
  /// written out (a call and the name's bytes less in the device library); the independent
  /// vectors (scripts/test/v2-vectors.py) compute it from the name, so it cannot be wrong
  /// without every vector failing.
  init(crypto: Crypto) {
    self.crypto = crypto
    hash = [
      0xD2, 0xC4, 0xEE, 0x6F, 0x70, 0xF5, 0xA5, 0x87, 0x94, 0xE4, 0x3B, 0x02, 0x88, 0x41, 0x00,
      0xAC, 0xB9, 0x9F, 0xC2, 0x57, 0xBE, 0x32, 0x3C, 0x23, 0x32, 0xBE, 0x5A, 0xE8, 0xEA, 0xC2,
      0x4C, 0xA5,
    ]
    chainingKey = hash
  }

  /// A transcript resumed where it stood (an attempt's `h2` and `ck_e`).
  init(crypto: Crypto, hash: ArraySlice<UInt8>, chainingKey: ArraySlice<UInt8>) {
    self.crypto = crypto
    self.hash = Array(hash)
    self.chainingKey = Array(chainingKey)
  }

  /// `h = HASH(h ‖ data)`.
  @inline(never)
  mutating func mixHash(_ data: ArraySlice<UInt8>) {
    var input = hash
    input.append(contentsOf: data)
    hash = crypto.derive(input: input[...], label: "tether2 hash")
  }

  /// `ck = PRF(ck, data, "tether2 ck")`; the previous chaining key is wiped.
  @inline(never)
  mutating func mixKey(_ data: ArraySlice<UInt8>) {
    var previous = chainingKey
    chainingKey = crypto.derive(key: previous, input: data, label: "tether2 ck")
    crypto.wipe(&previous)
  }

  /// `PRF(ck, "", label)`: a key of this point of the schedule.
  @inline(never)
  func key(_ label: StaticString) -> [UInt8] {
    crypto.derive(key: chainingKey, input: [], label: label)
  }

  /// Steps 2 to 5 (the INIT up to `e_d`): afterwards `hash` is `h1` and `chainingKey` is
  /// `ck_e`, the point where `k_req`, `k_refuse` and `k_cookie` are taken. `prefix` is the
  /// INIT's first 18 bytes (kind, version, `N_d`), `token` its `W`.
  @inline(never)
  mutating func mixInitiation(
    prefix: ArraySlice<UInt8>, token: ArraySlice<UInt8>, deviceSecret: [UInt8],
    ephemeral: ArraySlice<UInt8>
  ) {
    mixHash(prefix)
    mixHash(token)
    mixKey(deviceSecret[...])
    mixHash(ephemeral)
    mixKey(ephemeral)
  }

  /// Steps 7 to 9 (the RESPONSE up to its ticket), from `h2` and `ck_e`: returns the
  /// session secret `S`. `header` is the RESPONSE's first 45 bytes, `sharedSecret` the DH
  /// of the two ephemeral keys (wiped here). `S` is taken before the ticket is mixed in
  /// because the ticket carries `S`, sealed for the edge: the edge needs `S` to make it.
  @inline(never)
  mutating func mixResponseKeys(
    header: ArraySlice<UInt8>, ephemeral: ArraySlice<UInt8>, sharedSecret: inout [UInt8]
  ) -> [UInt8] {
    mixHash(header)
    mixHash(ephemeral)
    mixKey(ephemeral)
    mixKey(sharedSecret[...])
    crypto.wipe(&sharedSecret)
    return crypto.derive(key: chainingKey, input: hash[...], label: "tether2 session")
  }

  /// Steps 10 and 11: mixes the ticket in and returns the RESPONSE's tag,
  /// `AEAD(k_resp, 0^12, ad = h, empty)`, which covers the whole RESPONSE. The chaining key
  /// is wiped: the handshake needs it no more.
  @inline(never)
  mutating func mixTicket(_ ticket: ArraySlice<UInt8>) -> [UInt8] {
    mixHash(ticket)
    defer { wipe() }
    return crypto.sealOnce(key: chainingKey, label: "tether2 resp", ad: hash[...], plaintext: [])
  }

  /// Wipes the chaining key (the transcript hash is public).
  mutating func wipe() { crypto.wipe(&chainingKey) }

  /// ASCII text as bytes, zero-padded to `width` (a label: 16) if it is shorter.
  static func ascii(_ text: StaticString, width: Int = 0) -> [UInt8] {
    text.withUTF8Buffer { buffer in
      var bytes = [UInt8](repeating: 0, count: max(width, buffer.count))
      for i in 0..<buffer.count { bytes[i] = buffer[i] }
      return bytes
    }
  }
}

extension SessionCrypto {
  /// `PRF(key, input, label)` of §12.1, `length` bytes (32, or 16 for `PRF16`); with an
  /// empty key, the unkeyed hash (`HASH` is this with the label "tether2 hash"). Public so
  /// the edge's own keyed values (cookies, `mac2`, reset values) are this one function too.
  @inline(never)
  public func derive(
    key: [UInt8] = [], input: ArraySlice<UInt8>, label: StaticString, length: Int = 32
  ) -> [UInt8] {
    blake2b(
      length: length, input: input, key: key[...], salt: [UInt8](repeating: 0, count: 16),
      personal: HandshakeTranscript<Self>.ascii(label, width: 16))
  }

  /// `AEAD(PRF(key, "", label), 0^12, ad, plaintext)`, the derived key wiped: each seal
  /// of the handshake under a key it uses once (`k_req`, `k_resp`, `k_confirm`), which is
  /// why the nonce can be zeros.
  @inline(never)
  func sealOnce(
    key: [UInt8], label: StaticString, ad: ArraySlice<UInt8>, plaintext: ArraySlice<UInt8>
  ) -> [UInt8] {
    var once = derive(key: key, input: [], label: label)
    defer { wipe(&once) }
    return aeadSeal(
      key: once, nonce: [UInt8](repeating: 0, count: 12), ad: ad, plaintext: plaintext)
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
