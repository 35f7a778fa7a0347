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
    var d2e = crypto.derive(key: sessionSecret, input: [], label: "tether2 d2e")
    var e2d = crypto.derive(key: sessionSecret, input: [], label: "tether2 e2d")
    defer {
      crypto.wipe(&d2e)
      crypto.wipe(&e2d)
    }
    guard let sending = crypto.cipher(key: d2e), let receiving = crypto.cipher(key: e2d) else {
      throw .badKey
    }
    self.sessionID = sessionID
    deviceToEdge = sending
    edgeToDevice = receiving
    resumeKey = crypto.derive(key: sessionSecret, input: [], label: "tether2 resume")
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
