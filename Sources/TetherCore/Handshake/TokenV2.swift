// SPDX-License-Identifier: Apache-2.0
/// A version 2 token as the device reads it (docs/PROTOCOL.md §12.4): the text `"2."` and
/// the 251 bytes of `T` in base64url without padding. The device takes from it the public
/// header (version, key id, expiry), the device secret (the handshake's pre-shared key) and
/// `W`, the 219 bytes it sends in its INIT (`T[0 ..< 11] ‖ T[43 ..< 251]`). It cannot open
/// the sealed part, so it cannot tell a genuine token from a well-formed forgery: the edge
/// does, and refuses the handshake.
public struct TokenV2: Sendable {
  /// The binary token's size.
  public static var binaryLength: Int { 251 }
  /// The text's size: `"2."` and 335 characters of base64url.
  public static var textLength: Int { 337 }
  /// The token version, byte 0 of `T` and the digit before the dot.
  public static var version: UInt8 { 0x02 }

  /// Why a text is not a version 2 token. The join it was given to ends as the edge's
  /// invalid-token refusal would, with nothing sent (§12.4).
  public enum Refusal: Error, Equatable, Sendable {
    /// It does not start with `"2."` (a version 1 token, an empty text, anything else).
    case notVersion2
    /// It is not 337 bytes (or its base64 decodes to another length).
    case wrongLength
    /// The characters after `"2."` are not base64url without padding.
    case badBase64
    /// Byte 0 of `T` is not 2.
    case wrongVersion
  }

  /// `T[11 ..< 43]`: the device secret, the handshake's pre-shared key.
  public let deviceSecret: [UInt8]
  /// `W` = `T[0 ..< 11] ‖ T[43 ..< 251]`: what the INIT carries.
  public let sent: [UInt8]

  /// The token version, `T[0]`: always ``version`` once parsed.
  public var tokenVersion: UInt8 { sent[0] }
  /// The key id of the certificate the token was minted under (§12.3).
  public var keyID: UInt16 { UInt16(truncatingIfNeeded: bigEndian(sent[...], at: 1, width: 2)) }
  /// The expiry, unix seconds (0: never), judged by the edge's clock.
  public var expiry: UInt64 { bigEndian(sent[...], at: 3, width: 8) }

  /// Parses `text` with `crypto`'s base64url decoder; the decoded bytes are wiped once the
  /// secret and `W` are taken from them.
  /// - Throws: a ``Refusal`` for any text that is not a version 2 token; never traps.
  public init<Crypto: SessionCrypto>(text: ArraySlice<UInt8>, crypto: Crypto) throws(Refusal) {
    let b = text.startIndex
    guard text.count >= 2, text[b] == UInt8(ascii: "2"), text[b + 1] == UInt8(ascii: ".") else {
      throw .notVersion2
    }
    guard text.count == Self.textLength else { throw .wrongLength }
    // ASCII only, before the decoder sees it: libsodium 1.0.18's decoder reads a character
    // as a signed char, so it takes 0xDF and 0xAD for '_' and a second text would decode
    // to the same token.
    guard text.allSatisfy({ $0 < 0x80 }),
      var binary = crypto.base64URLDecode(text[(b + 2)...])
    else { throw .badBase64 }
    defer { crypto.wipe(&binary) }
    guard binary.count == Self.binaryLength else { throw .wrongLength }
    guard binary[0] == Self.version else { throw .wrongVersion }
    deviceSecret = Array(binary[11..<43])
    var sent = binary  // a copy: `binary` is wiped whole
    sent.removeSubrange(11..<43)
    self.sent = sent
  }
}
