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

  /// `W` (bytes 0 ..< 219), then the device secret (219 ..< 251): inline, so a token is
  /// copied as plain bytes (``InlineBytes``).
  private(set) var stored = InlineBytes()
  /// Where the device secret is in ``stored``; `W` is before it.
  static var secretOffset: Int { 219 }

  /// Calls `body` with ``stored`` where it is: a read through the mutable access, which,
  /// unlike ``InlineBytes/withUnsafeBytes(_:)`` (`withUnsafeBytes(of:)` of a value), makes
  /// no copy of the 256 bytes, and so leaves none of the device secret on the stack.
  mutating func withStoredBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    stored.withUnsafeMutableBytes { body(UnsafeRawBufferPointer($0)) }
  }

  /// `T[11 ..< 43]`: the device secret, the handshake's pre-shared key.
  public var deviceSecret: [UInt8] { stored.array(Self.secretOffset..<(Self.secretOffset + 32)) }
  /// `W` = `T[0 ..< 11] ‖ T[43 ..< 251]`: what the INIT carries.
  public var sent: [UInt8] { stored.array(0..<Self.secretOffset) }

  /// The token version, `T[0]`: always ``version`` once parsed.
  public var tokenVersion: UInt8 { stored.withUnsafeBytes { $0[0] } }
  /// The key id of the certificate the token was minted under (§12.3).
  public var keyID: UInt16 {
    UInt16(truncatingIfNeeded: stored.withUnsafeBytes { bigEndian($0, at: 1, width: 2) })
  }
  /// The expiry, unix seconds (0: never), judged by the edge's clock.
  public var expiry: UInt64 { stored.withUnsafeBytes { Self.expiry(of: $0) } }

  /// ``expiry`` read where the token is (``withStoredBytes(_:)``: no copy of it first).
  mutating func expiryInPlace() -> UInt64 { withStoredBytes { Self.expiry(of: $0) } }

  private static func expiry(of stored: UnsafeRawBufferPointer) -> UInt64 {
    bigEndian(stored, at: 3, width: 8)
  }

  /// Parses `text` with `crypto`'s base64url decoder; the decoded bytes are wiped once the
  /// secret and `W` are taken from them.
  /// - Throws: a ``Refusal`` for any text that is not a version 2 token; never traps.
  public init<Crypto: SessionCrypto>(text: ArraySlice<UInt8>, crypto: Crypto) throws(Refusal) {
    var token = TokenV2()
    if let refusal = text.withUnsafeBytes({ Self.parse($0, crypto: crypto, into: &token) }) {
      throw refusal
    }
    self = token
  }

  /// No token (zeros): what the device holds until it parses one.
  init() {}

  /// Parses `text` into this token (the device's call: no error to build, the token kept
  /// inline where it is held); false, with this token's bytes wiped, if it is not one.
  mutating func read<Crypto: SessionCrypto>(_ text: UnsafeRawBufferPointer, crypto: Crypto)
    -> Bool
  {
    Self.parse(text, crypto: crypto, into: &self) == nil
  }

  /// The parse itself, into `token` (wiped first, and again if `text` is refused).
  @inline(never)
  private static func parse<Crypto: SessionCrypto>(
    _ text: UnsafeRawBufferPointer, crypto: Crypto, into token: inout TokenV2
  ) -> Refusal? {
    token.stored.withUnsafeMutableBytes { crypto.wipe($0) }
    guard text.count >= 2, text[0] == UInt8(ascii: "2"), text[1] == UInt8(ascii: ".") else {
      return .notVersion2
    }
    guard text.count == Self.textLength else { return .wrongLength }
    // ASCII only, before the decoder sees it: libsodium 1.0.18's decoder reads a character
    // as a signed char, so it takes 0xDF and 0xAD for '_' and a second text would decode
    // to the same token.
    for byte in text where byte >= 0x80 { return .badBase64 }
    var binary = InlineBytes()
    let refusal: Refusal? = binary.withUnsafeMutableBytes { binary in
      defer { crypto.wipe(binary) }
      guard let count = crypto.base64URLDecode(into: binary, text: piece(text, 2, text.count - 2))
      else { return .badBase64 }
      guard count == Self.binaryLength else { return .wrongLength }
      guard binary[0] == Self.version else { return .wrongVersion }
      let from = UnsafeRawBufferPointer(binary)
      return token.stored.withUnsafeMutableBytes {
        copy(piece(from, 0, 11), into: $0, at: 0)
          && copy(piece(from, 43, 208), into: $0, at: 11)
          && copy(piece(from, 11, 32), into: $0, at: Self.secretOffset)
      } ? nil : .wrongLength
    }
    if refusal != nil { token.stored.withUnsafeMutableBytes { crypto.wipe($0) } }
    return refusal
  }
}
