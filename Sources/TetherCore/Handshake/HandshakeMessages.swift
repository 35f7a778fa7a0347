// SPDX-License-Identifier: Apache-2.0
// The handshake's datagrams (docs/PROTOCOL.md §12.5, §12.6, §12.9): fixed layouts, each a
// value that holds its exact bytes and reads its fields in place. Decoding checks the kind,
// the exact size and every byte that has one valid value (§8's strictness); what is sealed
// inside is the handshake's to open. The transcript hashes byte ranges of these datagrams,
// so keeping the bytes, not fields to re-encode, is what makes both sides hash the same.

/// Wraps `parts`, concatenated after `kind`, if they make exactly `size` bytes.
private func assemble(
  kind: UInt8, size: Int, _ parts: [ArraySlice<UInt8>]
) throws(HandshakeError) -> [UInt8] {
  var bytes: [UInt8] = [kind]
  for part in parts { bytes.append(contentsOf: part) }
  guard bytes.count == size else { throw .malformed }
  return bytes
}

/// `bytes` if it is `size` bytes of `kind`.
private func checked(
  _ bytes: ArraySlice<UInt8>, kind: UInt8, size: Int
) throws(HandshakeError) -> [UInt8] {
  guard bytes.count == size, bytes.first == kind else { throw .malformed }
  return Array(bytes)
}

private func bigEndianBytes(_ value: UInt64, width: Int) -> ArraySlice<UInt8> {
  var out: [UInt8] = []
  out.appendBigEndian(value, byteCount: width)
  return out[...]
}

/// INIT (`0x01`), device → edge, 469 bytes: kind, version 2, `N_d`, `e_d`, `W`, the sealed
/// request, `mac2`.
public struct InitMessage: Equatable, Sendable {
  public static var kind: UInt8 { 0x01 }
  /// The version this INIT is written in.
  public static var version: UInt8 { 0x02 }
  public static var size: Int { 469 }
  /// Where `mac2` starts: it covers every byte before it.
  static var mac2Offset: Int { 453 }
  public let bytes: [UInt8]

  /// - Throws: ``HandshakeError/malformed`` unless 469 bytes of kind 1, version 2.
  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    self.bytes = try checked(bytes, kind: Self.kind, size: Self.size)
    guard self.bytes[1] == Self.version else { throw .malformed }
  }

  /// Bytes the device wrote in this layout.
  init(checked bytes: [UInt8]) { self.bytes = bytes }

  public init(
    deviceNonce: ArraySlice<UInt8>, ephemeral: ArraySlice<UInt8>, token: ArraySlice<UInt8>,
    sealedRequest: ArraySlice<UInt8>, mac2: ArraySlice<UInt8>
  ) throws(HandshakeError) {
    bytes = try assemble(
      kind: Self.kind, size: Self.size,
      [[Self.version][...], deviceNonce, ephemeral, token, sealedRequest, mac2])
  }

  /// `N_d`, the attempt's nonce.
  public var deviceNonce: ArraySlice<UInt8> { bytes[2..<18] }
  /// `e_d`, the attempt's ephemeral public key.
  public var ephemeral: ArraySlice<UInt8> { bytes[18..<50] }
  /// `W`: the token's public header and sealed part.
  public var token: ArraySlice<UInt8> { bytes[50..<269] }
  /// `AEAD(k_req, 0^12, ad = h1, Q)`.
  public var sealedRequest: ArraySlice<UInt8> { bytes[269..<453] }
  public var mac2: ArraySlice<UInt8> { bytes[453..<469] }
}

/// RESPONSE (`0x02`), edge → device, 269 bytes.
public struct ResponseMessage: Equatable, Sendable {
  public static var kind: UInt8 { 0x02 }
  public static var size: Int { 269 }
  public let bytes: [UInt8]

  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    self.bytes = try checked(bytes, kind: Self.kind, size: Self.size)
  }

  /// Bytes of this size and kind.
  init(checked bytes: [UInt8]) { self.bytes = bytes }

  public init(
    deviceNonce: ArraySlice<UInt8>, sessionID: UInt64, edgeNonce: ArraySlice<UInt8>,
    ticketLifetimeMs: UInt32, ephemeral: ArraySlice<UInt8>, ticket: ArraySlice<UInt8>,
    tag: ArraySlice<UInt8>
  ) throws(HandshakeError) {
    bytes = try assemble(
      kind: Self.kind, size: Self.size,
      [
        deviceNonce, bigEndianBytes(sessionID, width: 8), edgeNonce,
        bigEndianBytes(UInt64(ticketLifetimeMs), width: 4), ephemeral, ticket, tag,
      ])
  }

  /// `N_d`, echoed: the attempt this answers.
  public var deviceNonce: ArraySlice<UInt8> { bytes[1..<17] }
  public var sessionID: UInt64 { bigEndian(bytes[...], at: 17, width: 8) }
  /// `N_e`.
  public var edgeNonce: ArraySlice<UInt8> { bytes[25..<41] }
  /// How long the CONFIRM may take, ms.
  public var ticketLifetimeMs: UInt32 {
    UInt32(truncatingIfNeeded: bigEndian(bytes[...], at: 41, width: 4))
  }
  /// The bytes mixed into the transcript at step 7: kind, `N_d`, session id, `N_e`, lifetime.
  public var header: ArraySlice<UInt8> { bytes[0..<45] }
  /// `e_e`, the edge's ephemeral public key.
  public var ephemeral: ArraySlice<UInt8> { bytes[45..<77] }
  /// The ticket, opaque to the device.
  public var ticket: ArraySlice<UInt8> { bytes[77..<253] }
  /// `AEAD(k_resp, 0^12, ad = h, empty)`.
  public var tag: ArraySlice<UInt8> { bytes[253..<269] }
}

/// CONFIRM (`0x03`), device → edge, 201 bytes: kind, session id, ticket, tag.
public struct ConfirmMessage: Equatable, Sendable {
  public static var kind: UInt8 { 0x03 }
  public static var size: Int { 201 }
  public let bytes: [UInt8]

  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    self.bytes = try checked(bytes, kind: Self.kind, size: Self.size)
  }

  /// Bytes the device wrote in this layout.
  init(checked bytes: [UInt8]) { self.bytes = bytes }

  public init(sessionID: UInt64, ticket: ArraySlice<UInt8>, tag: ArraySlice<UInt8>)
    throws(HandshakeError)
  {
    bytes = try assemble(
      kind: Self.kind, size: Self.size, [bigEndianBytes(sessionID, width: 8), ticket, tag])
  }

  public var sessionID: UInt64 { bigEndian(bytes[...], at: 1, width: 8) }
  public var ticket: ArraySlice<UInt8> { bytes[9..<185] }
  /// What the tag covers: every byte before it.
  public var head: ArraySlice<UInt8> { bytes[0..<185] }
  /// `AEAD(k_confirm, 0^12, ad = head, empty)`.
  public var tag: ArraySlice<UInt8> { bytes[185..<201] }
}

/// The two answers sealed with XChaCha20-Poly1305 under a random nonce (§12.6):
/// COOKIE_REPLY (`0x04`, 73 bytes, the cookie) and REFUSE_SEALED (`0x06`, 59 bytes, reason
/// and detail). Kind, `N_d` (the associated data, with the kind), nonce, sealed bytes.
public struct SealedAnswer: Equatable, Sendable {
  public static var cookieReplyKind: UInt8 { 0x04 }
  public static var refusalKind: UInt8 { 0x06 }
  public let bytes: [UInt8]

  /// The size of an answer of `kind` (a kind that is neither: 0).
  static func size(of kind: UInt8) -> Int {
    kind == cookieReplyKind ? 73 : kind == refusalKind ? 59 : 0
  }

  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    let kind = bytes.first ?? 0
    self.bytes = try checked(bytes, kind: kind, size: Self.size(of: kind))
  }

  /// Bytes of one of the two kinds, of its size.
  init(checked bytes: [UInt8]) { self.bytes = bytes }

  public init(
    kind: UInt8, deviceNonce: ArraySlice<UInt8>, nonce: ArraySlice<UInt8>,
    sealed: ArraySlice<UInt8>
  ) throws(HandshakeError) {
    bytes = try assemble(kind: kind, size: Self.size(of: kind), [deviceNonce, nonce, sealed])
  }

  public var kind: UInt8 { bytes[0] }
  /// `N_d`, echoed.
  public var deviceNonce: ArraySlice<UInt8> { bytes[1..<17] }
  /// The associated data: kind and `N_d`.
  public var associatedData: ArraySlice<UInt8> { bytes[0..<17] }
  /// The XChaCha20-Poly1305 nonce, 24 random bytes.
  public var nonce: [UInt8] { Array(bytes[17..<41]) }
  public var sealed: ArraySlice<UInt8> { bytes[41...] }
}

/// REFUSE_CLEAR (`0x05`), edge → device, 18 bytes: kind, `N_d`, reason `0x01` (the token
/// does not open). Unsealed: the edge shares no key with a device whose token it cannot open.
public struct RefuseClearMessage: Equatable, Sendable {
  public static var kind: UInt8 { 0x05 }
  public static var size: Int { 18 }
  /// The only reason: the token's sealed part did not open.
  public static var tokenNotOpened: UInt8 { 0x01 }
  public let bytes: [UInt8]

  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    self.bytes = try checked(bytes, kind: Self.kind, size: Self.size)
    guard self.bytes[17] == Self.tokenNotOpened else { throw .malformed }
  }

  public init(deviceNonce: ArraySlice<UInt8>) throws(HandshakeError) {
    bytes = try assemble(
      kind: Self.kind, size: Self.size, [deviceNonce, [Self.tokenNotOpened][...]])
  }

  public var deviceNonce: ArraySlice<UInt8> { bytes[1..<17] }
}

/// RESET (`0x08`), edge → device, 25 bytes: kind, session id, reset value (§12.9).
public struct ResetMessage: Equatable, Sendable {
  public static var kind: UInt8 { 0x08 }
  public static var size: Int { 25 }
  public let bytes: [UInt8]

  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    self.bytes = try checked(bytes, kind: Self.kind, size: Self.size)
  }

  public init(sessionID: UInt64, resetValue: ArraySlice<UInt8>) throws(HandshakeError) {
    bytes = try assemble(
      kind: Self.kind, size: Self.size, [bigEndianBytes(sessionID, width: 8), resetValue])
  }

  public var sessionID: UInt64 { bigEndian(bytes[...], at: 1, width: 8) }
  public var resetValue: ArraySlice<UInt8> { bytes[9..<25] }
}
