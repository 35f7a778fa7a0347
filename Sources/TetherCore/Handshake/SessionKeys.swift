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
    var keys = Derived()
    defer { keys.wipe(crypto) }
    guard sessionSecret.withUnsafeBytes({ keys.derive(from: $0, crypto: crypto) }) else {
      throw .badKey
    }
    try self.init(keys, sessionID: sessionID, crypto: crypto)
  }

  /// The ciphers of keys already derived (``Derived``); `keys` is the caller's to wipe.
  init(_ keys: Derived, sessionID: UInt64, crypto: Crypto) throws(HandshakeError) {
    guard let sending = crypto.cipher(keyBytes: keys.deviceToEdge),
      let receiving = crypto.cipher(keyBytes: keys.edgeToDevice)
    else { throw .badKey }
    self.sessionID = sessionID
    deviceToEdge = sending
    edgeToDevice = receiving
    resumeKey = keys.resume.bytes
  }

  /// `k_d2e`, `k_e2d` and `k_resume` held inline: what the device keeps of a handshake,
  /// with no array (`make v2-size`).
  public struct Derived: Sendable {
    public var deviceToEdge = KeyBytes()
    public var edgeToDevice = KeyBytes()
    public var resume = KeyBytes()

    public init() {}

    /// The three keys of the session secret `S` (32 bytes); false if a size is wrong.
    @inline(never)
    mutating func derive(from secret: UnsafeRawBufferPointer, crypto: Crypto) -> Bool {
      deviceToEdge.withUnsafeMutableBytes {
        SessionKeys.derive(into: $0, secret, "tether2 d2e", crypto)
      }
        && edgeToDevice.withUnsafeMutableBytes {
          SessionKeys.derive(into: $0, secret, "tether2 e2d", crypto)
        }
        && resume.withUnsafeMutableBytes {
          SessionKeys.derive(into: $0, secret, "tether2 resume", crypto)
        }
    }

    /// Wipes all three through `crypto`.
    @inline(never)
    public mutating func wipe(_ crypto: Crypto) {
      Swift.withUnsafeMutableBytes(of: &self) { crypto.wipe($0) }
    }
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
