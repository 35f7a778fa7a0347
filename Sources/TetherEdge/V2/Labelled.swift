// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The labels of protocol version 2's keyed values that the edge's stateless path makes
/// (docs/PROTOCOL.md §12.1): each purpose its own BLAKE2b personalization, so no value can
/// stand for another.
enum Label: String {
  /// The cookie of an address (§12.6).
  case cookie = "tether2 cookie"
  /// An INIT's `mac2` under a cookie (§12.6).
  case mac2 = "tether2 mac2"
  /// A session's reset value (§12.9).
  case reset = "tether2 reset"

  /// The personalization: the label's ASCII, zero-padded to 16 bytes.
  var personal: [UInt8] {
    let ascii = Array(rawValue.utf8)
    return ascii + [UInt8](repeating: 0, count: Labelled.blockBytes - ascii.count)
  }
}

/// `PRF(k, x, L)` of §12.1, through the crypto seam: keyed BLAKE2b with salt `0^16` and the
/// label as personalization. The handshake (TetherCore) computes the same function for its
/// own labels; this one holds only the edge's, until the two are folded together.
enum Labelled {
  /// The size of BLAKE2b's salt and personalization.
  static let blockBytes = 16

  /// `PRF16(key, input, label)`: the 16-byte output.
  static func prf16<Crypto: SessionCrypto>(
    _ crypto: Crypto, key: ArraySlice<UInt8>, input: ArraySlice<UInt8>, label: Label
  ) -> [UInt8] {
    crypto.blake2b(
      length: 16, input: input, key: key, salt: [UInt8](repeating: 0, count: blockBytes),
      personal: label.personal)
  }
}
