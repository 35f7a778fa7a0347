// SPDX-License-Identifier: Apache-2.0
/// What a completed handshake leaves a session (docs/PROTOCOL.md §12.5, the keys table):
/// the two data ciphers, one per direction, and `k_resume`, all from the session secret
/// `S`, each under its own label. Both sides make the same value; each takes the two
/// ciphers the other way round (``deviceData(limits:)``, ``edgeData(limits:)``).
public struct SessionKeys<Crypto: SessionCrypto> {
  /// The edge's id of the session: epoch ‖ serial (§12.8).
  public let sessionID: UInt64
  /// `k_d2e`: seals DATA from the device to the edge.
  public let deviceToEdge: Crypto.Cipher
  /// `k_e2d`: seals DATA from the edge to the device.
  public let edgeToDevice: Crypto.Cipher
  /// `k_resume`: proves this session in a later resume's request (§12.10). A secret: the
  /// holder wipes it (``wipe()``) when the session is gone.
  public private(set) var resumeKey: [UInt8]

  /// The keys of `sessionSecret`; the intermediate keys are wiped (the ciphers keep their
  /// own copies), `sessionSecret` is the caller's to wipe.
  /// - Throws: ``HandshakeError/badKey`` if the seam makes no cipher of a derived key.
  public init(sessionSecret: [UInt8], sessionID: UInt64, crypto: Crypto)
    throws(HandshakeError)
  {
    // The two data keys on the stack (each cipher keeps its own copy), wiped here.
    var d2e = KeyBytes()
    var e2d = KeyBytes()
    var resume = [UInt8](repeating: 0, count: KeyBytes.count)
    defer {
      d2e.withUnsafeMutableBytes { crypto.wipe($0) }
      e2d.withUnsafeMutableBytes { crypto.wipe($0) }
    }
    let derived = sessionSecret.withUnsafeBytes { secret in
      d2e.withUnsafeMutableBytes { Self.derive(into: $0, secret, "tether2 d2e", crypto) }
        && e2d.withUnsafeMutableBytes { Self.derive(into: $0, secret, "tether2 e2d", crypto) }
        && resume.withUnsafeMutableBytes { Self.derive(into: $0, secret, "tether2 resume", crypto) }
    }
    guard derived, let sending = crypto.cipher(keyBytes: d2e),
      let receiving = crypto.cipher(keyBytes: e2d)
    else {
      crypto.wipe(&resume)
      throw .badKey
    }
    self.sessionID = sessionID
    deviceToEdge = sending
    edgeToDevice = receiving
    resumeKey = resume
  }

  /// `PRF(S, "", label)` into `out`.
  private static func derive(
    into out: UnsafeMutableRawBufferPointer, _ secret: UnsafeRawBufferPointer,
    _ label: StaticString, _ crypto: Crypto
  ) -> Bool {
    crypto.derive(
      into: out, key: secret, input: UnsafeRawBufferPointer(start: nil, count: 0), label: label)
  }

  /// The device's DATA: it seals under `k_d2e` and opens under `k_e2d`.
  public func deviceData(limits: KeyLimits = .standard) -> SealedData<Crypto.Cipher> {
    SealedData(sessionID: sessionID, sending: deviceToEdge, receiving: edgeToDevice, limits: limits)
  }

  /// The edge's DATA: it seals under `k_e2d` and opens under `k_d2e`.
  public func edgeData(limits: KeyLimits = .standard) -> SealedData<Crypto.Cipher> {
    SealedData(sessionID: sessionID, sending: edgeToDevice, receiving: deviceToEdge, limits: limits)
  }

  /// Wipes `k_resume` through `crypto`.
  public mutating func wipe(with crypto: Crypto) { crypto.wipe(&resumeKey) }

  /// The CONFIRM's tag (§12.5): `AEAD(k_confirm, 0^12, ad = head, empty)`, `k_confirm` =
  /// `PRF(S, "", "tether2 confirm")`, `head` the CONFIRM's first 185 bytes. The device
  /// writes it, the edge recomputes it from the ticket's `S` and compares in constant time.
  static func confirmTag(head: ArraySlice<UInt8>, sessionSecret: [UInt8], crypto: Crypto)
    -> [UInt8]
  {
    crypto.sealOnce(key: sessionSecret, label: "tether2 confirm", ad: head, plaintext: [])
  }
}
