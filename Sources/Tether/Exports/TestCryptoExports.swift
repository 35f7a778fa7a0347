// SPDX-License-Identifier: Apache-2.0
// The exports of the two test-only builds of the device library (Tests/c/tether_test_crypto.h,
// documented there): never compiled into the shipped library, whose symbol check
// (scripts/check/abi-symbols.sh) fails on any tether_test_* function. Each goes through the
// crypto seam as the library's own code does: a generic SessionCrypto, here the one the
// library is built with (SodiumCrypto, null in the TETHER_NULL_CRYPTO build).
#if TETHER_TEST_CRYPTO || TETHER_NULL_CRYPTO
  import CTetherTestCrypto

  #if canImport(TetherCore)
    // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
    import TetherCore
    import TetherSodium
  #endif

  /// The seam the exports call, as an opaque ``SessionCrypto``: every call goes through the
  /// protocol's requirements, as TetherCore's would.
  private func seam() -> some SessionCrypto {
    _ = SodiumCrypto.start()
    return SodiumCrypto()
  }

  private let refused: Int32 = -1
  private let nullArgument: Int32 = -2

  /// `count` bytes at `pointer`; nil when the pointer is NULL but bytes are wanted.
  private func bytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> [UInt8]? {
    guard count > 0 else { return [] }
    guard let pointer else { return nil }
    return [UInt8](UnsafeBufferPointer(start: pointer, count: count))
  }

  /// Copies `result` to `out`: 0, or `refused` when there is no result.
  private func write(_ result: [UInt8]?, to out: UnsafeMutablePointer<UInt8>?) -> Int32 {
    guard let result else { return refused }
    if let out, !result.isEmpty { out.update(from: result, count: result.count) }
    return 0
  }

  /// A seal's or a digest's result: the seam answers a refusal with no bytes (a sealed
  /// text has its tag, a digest at least 16 bytes).
  private func nonEmpty(_ result: [UInt8]) -> [UInt8]? { result.isEmpty ? nil : result }

  /// The body of every AEAD export: its arguments read (`nullArgument` when a pointer that
  /// must not be NULL is; an open may have no `out`, its plaintext being empty), then
  /// `operation` on them (key, nonce, associated data, text), its result written to `out`.
  private func aeadExport(
    _ out: UnsafeMutablePointer<UInt8>?, sealing: Bool, key: UnsafePointer<UInt8>?,
    nonce: UnsafePointer<UInt8>?, nonceLength: Int, ad: UnsafePointer<UInt8>?, adLength: Int,
    text: UnsafePointer<UInt8>?, textLength: Int,
    _ operation: ([UInt8], [UInt8], [UInt8], [UInt8]) -> [UInt8]?
  ) -> Int32 {
    guard out != nil || !sealing, let key = bytes(key, 32),
      let nonce = bytes(nonce, nonceLength), let ad = bytes(ad, adLength),
      let text = bytes(text, textLength)
    else { return nullArgument }
    return write(operation(key, nonce, ad, text), to: out)
  }

  @c @implementation
  public func tether_test_random_bytes(_ out: UnsafeMutablePointer<UInt8>?, _ length: Int) -> Int32
  {
    guard out != nil || length == 0 else { return nullArgument }
    return write(seam().randomBytes(count: length), to: out)
  }

  @c @implementation
  public func tether_test_aead_seal(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?,
    _ nonce: UnsafePointer<UInt8>?, _ ad: UnsafePointer<UInt8>?, _ adLength: Int,
    _ plaintext: UnsafePointer<UInt8>?, _ plaintextLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: true, key: key, nonce: nonce, nonceLength: 12, ad: ad, adLength: adLength,
      text: plaintext, textLength: plaintextLength
    ) { nonEmpty(seam().aeadSeal(key: $0, nonce: $1, ad: $2[...], plaintext: $3[...])) }
  }

  @c @implementation
  public func tether_test_aead_open(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?,
    _ nonce: UnsafePointer<UInt8>?, _ ad: UnsafePointer<UInt8>?, _ adLength: Int,
    _ sealed: UnsafePointer<UInt8>?, _ sealedLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: false, key: key, nonce: nonce, nonceLength: 12, ad: ad, adLength: adLength,
      text: sealed, textLength: sealedLength
    ) { seam().aeadOpen(key: $0, nonce: $1, ad: $2[...], sealed: $3[...]) }
  }

  @c @implementation
  public func tether_test_xaead_seal(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?,
    _ nonce: UnsafePointer<UInt8>?, _ ad: UnsafePointer<UInt8>?, _ adLength: Int,
    _ plaintext: UnsafePointer<UInt8>?, _ plaintextLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: true, key: key, nonce: nonce, nonceLength: 24, ad: ad, adLength: adLength,
      text: plaintext, textLength: plaintextLength
    ) { nonEmpty(seam().xaeadSeal(key: $0, nonce: $1, ad: $2[...], plaintext: $3[...])) }
  }

  @c @implementation
  public func tether_test_xaead_open(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?,
    _ nonce: UnsafePointer<UInt8>?, _ ad: UnsafePointer<UInt8>?, _ adLength: Int,
    _ sealed: UnsafePointer<UInt8>?, _ sealedLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: false, key: key, nonce: nonce, nonceLength: 24, ad: ad, adLength: adLength,
      text: sealed, textLength: sealedLength
    ) { seam().xaeadOpen(key: $0, nonce: $1, ad: $2[...], sealed: $3[...]) }
  }

  @c @implementation
  public func tether_test_cipher_seal(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?, _ counter: UInt64,
    _ ad: UnsafePointer<UInt8>?, _ adLength: Int, _ plaintext: UnsafePointer<UInt8>?,
    _ plaintextLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: true, key: key, nonce: nil, nonceLength: 0, ad: ad, adLength: adLength,
      text: plaintext, textLength: plaintextLength
    ) { key, _, ad, plaintext in
      // The datagram as the session builds it: the header (here `ad`) first, then the
      // sealed text appended after it, with the header as associated data.
      var datagram = ad
      guard let cipher = seam().cipher(key: key),
        cipher.seal(counter: counter, plaintext: plaintext[...], appendingTo: &datagram, adStart: 0)
      else { return nil }
      return [UInt8](datagram[ad.count...])
    }
  }

  @c @implementation
  public func tether_test_cipher_open(
    _ out: UnsafeMutablePointer<UInt8>?, _ key: UnsafePointer<UInt8>?, _ counter: UInt64,
    _ ad: UnsafePointer<UInt8>?, _ adLength: Int, _ sealed: UnsafePointer<UInt8>?,
    _ sealedLength: Int
  ) -> Int32 {
    aeadExport(
      out, sealing: false, key: key, nonce: nil, nonceLength: 0, ad: ad, adLength: adLength,
      text: sealed, textLength: sealedLength
    ) { key, _, ad, sealed in
      var opened: [UInt8] = []
      guard let cipher = seam().cipher(key: key),
        cipher.open(counter: counter, ad: ad[...], sealed: sealed[...], into: &opened)
      else { return nil }
      return opened
    }
  }

  @c @implementation
  public func tether_test_x25519_public(
    _ out: UnsafeMutablePointer<UInt8>?, _ secret: UnsafePointer<UInt8>?
  ) -> Int32 {
    guard let out, let secret = bytes(secret, 32) else { return nullArgument }
    return write(seam().x25519PublicKey(secret: secret), to: out)
  }

  @c @implementation
  public func tether_test_x25519(
    _ out: UnsafeMutablePointer<UInt8>?, _ secret: UnsafePointer<UInt8>?,
    _ publicKey: UnsafePointer<UInt8>?
  ) -> Int32 {
    guard let out, let secret = bytes(secret, 32), let publicKey = bytes(publicKey, 32) else {
      return nullArgument
    }
    return write(seam().x25519(secret: secret, publicKey: publicKey[...]), to: out)
  }

  @c @implementation
  public func tether_test_blake2b(
    _ out: UnsafeMutablePointer<UInt8>?, _ outLength: Int, _ input: UnsafePointer<UInt8>?,
    _ inputLength: Int, _ key: UnsafePointer<UInt8>?, _ keyLength: Int,
    _ salt: UnsafePointer<UInt8>?, _ personal: UnsafePointer<UInt8>?
  ) -> Int32 {
    guard let out, let input = bytes(input, inputLength), let key = bytes(key, keyLength),
      let salt = bytes(salt, 16), let personal = bytes(personal, 16)
    else { return nullArgument }
    let digest = seam().blake2b(
      length: outLength, input: input[...], key: key[...], salt: salt, personal: personal)
    return write(nonEmpty(digest), to: out)
  }

  #if TETHER_TEST_CRYPTO
    /// The device's handshake the exports below drive, and the DATA keys its RESPONSE
    /// gave: one test's at a time, on its thread.
    nonisolated(unsafe) private var handshake = DeviceHandshake(crypto: SodiumCrypto())
    nonisolated(unsafe) private var data: SealedData<SodiumCrypto.Cipher>?

    /// A NUL-terminated string's bytes (at most `limit`), or nil for NULL.
    private func text(_ pointer: UnsafePointer<CChar>?, limit: Int) -> [UInt8]? {
      guard let pointer else { return nil }
      var bytes: [UInt8] = []
      while bytes.count < limit, pointer[bytes.count] != 0 {
        bytes.append(UInt8(bitPattern: pointer[bytes.count]))
      }
      return bytes
    }

    @c @implementation
    public func tether_test_v2_initiate(
      _ out: UnsafeMutablePointer<UInt8>?, _ token: UnsafePointer<CChar>?, _ flags: UInt8,
      _ uid: UInt32, _ appID: UnsafePointer<CChar>?, _ kind: UInt8,
      _ name: UnsafePointer<CChar>?, _ resumeID: UInt64, _ resumeKey: UnsafePointer<UInt8>?,
      _ cookie: UnsafePointer<UInt8>?
    ) -> Int32 {
      guard let out, let token = text(token, limit: 512), let appID = text(appID, limit: 64),
        let name = text(name, limit: 64)
      else { return nullArgument }
      guard SodiumCrypto.start(),
        let parsed = try? TokenV2(text: token[...], crypto: SodiumCrypto())
      else { return refused }
      var resume: DeviceHandshake<SodiumCrypto>.Resume?
      if resumeID != 0 {
        guard let key = bytes(resumeKey, 32) else { return nullArgument }
        resume = .init(sessionID: resumeID, key: key)
      }
      let request = HandshakeRequest(
        flags: flags, uid: uid, appID: appID, kind: kind, name: name)
      data = nil
      guard
        let initiation = try? handshake.initiate(
          token: parsed, request: request, resume: resume,
          cookie: cookie.map { [UInt8](UnsafeBufferPointer(start: $0, count: 16)) })
      else { return refused }
      return write(initiation.bytes, to: out)
    }

    @c @implementation
    public func tether_test_v2_receive(
      _ out: UnsafeMutablePointer<UInt8>?, _ answer: UnsafePointer<UInt8>?, _ length: Int
    ) -> Int32 {
      guard let out, let answer = bytes(answer, length) else { return nullArgument }
      guard case .established(let established)? = try? handshake.receive(answer[...]) else {
        return refused
      }
      data = established.keys.deviceData()
      return write(established.confirm.bytes, to: out)
    }

    @c @implementation
    public func tether_test_v2_seal(
      _ out: UnsafeMutablePointer<UInt8>?, _ payload: UnsafePointer<UInt8>?, _ length: Int
    ) -> Int32 {
      guard let out, let payload = bytes(payload, length) else { return nullArgument }
      var sealed: [UInt8] = []
      guard (try? data?.seal(payload[...], into: &sealed)) != nil, !sealed.isEmpty else {
        return refused
      }
      out.update(from: sealed, count: sealed.count)
      return Int32(sealed.count)
    }

    @c @implementation
    public func tether_test_v2_open(
      _ out: UnsafeMutablePointer<UInt8>?, _ datagram: UnsafePointer<UInt8>?, _ length: Int
    ) -> Int32 {
      guard let out, let datagram = bytes(datagram, length) else { return nullArgument }
      var payload: [UInt8] = []
      guard (try? data?.open(datagram[...], into: &payload)) != nil, !payload.isEmpty else {
        return refused
      }
      out.update(from: payload, count: payload.count)
      return Int32(payload.count)
    }

    @c @implementation
    public func tether_test_random_seed(_ seed: UnsafePointer<UInt8>?) -> Int32 {
      guard let seed else { return nullArgument }
      guard SodiumCrypto.start() else { return refused }
      SeededStream.start(seed: seed)
      return 0
    }
  #endif

  #if TETHER_NULL_CRYPTO
    @c @implementation
    public func tether_test_null_crypto() -> Int32 { 1 }
  #endif
#endif
