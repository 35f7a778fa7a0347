// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The byte layout of a version 2 token (docs/PROTOCOL.md §12.4): the binary token `T`, the
/// private fields `P` sealed inside it, and `W`, what a device sends of it. One place for
/// every offset, so the minter and the opener cannot disagree.
enum TokenV2Layout {
  /// `T[0]`.
  static let version: UInt8 = 0x02
  /// The binary token: public header, device secret, nonce, sealed part.
  static let tokenBytes = 251
  /// `T[0 ..< 11]`: version, key id, expiry. Public, and the sealed part's associated data.
  static let header = 0..<11
  /// `T[11 ..< 43]`: the device secret, the handshake's pre-shared key.
  static let secret = 11..<43
  /// `T[43 ..< 67]`: the random XChaCha20 nonce.
  static let nonce = 43..<67
  /// `T[67 ..< 251]`: `P` sealed under `K_token`, then its tag.
  static let sealed = 67..<251
  /// `W` = `T[0 ..< 11] ‖ T[43 ..< 251]`: the token without its device secret.
  static let wireBytes = 219
  /// The text: "2." and `T` in base64url without padding.
  static let textPrefix: [UInt8] = Array("2.".utf8)

  /// The private fields `P`, always this size whatever the names' lengths: the device
  /// secret again (32; how the edge learns it), the grant kind (1), the app id's name field
  /// (65), the channel name's or user id's (65), the uid (4, big-endian; 0 for a login),
  /// a reserved zero (1).
  static let privateBytes = 168
  /// Every name field is a length byte and 64 bytes (the name, then zeros).
  static let nameField = 64

  /// Grant kinds, as in `P` (and in an INIT's request and a ticket).
  static let kindChannel: UInt8 = 1
  static let kindLogin: UInt8 = 2

  /// `W` of a binary token; nil unless `binary` is 251 bytes.
  static func wire(of binary: [UInt8]) -> [UInt8]? {
    guard binary.count == tokenBytes else { return nil }
    return Array(binary[header]) + Array(binary[nonce.lowerBound..<tokenBytes])
  }

  /// Appends a name field: the length byte, the name (1 … 64 bytes, as its type checked),
  /// zeros to 64 bytes, so the field's size tells nothing of the name's.
  static func appendName(_ name: [UInt8], to out: inout [UInt8]) {
    out.append(UInt8(name.count))
    out.append(contentsOf: name)
    out.append(contentsOf: repeatElement(0, count: nameField - name.count))
  }

  /// The name in a 65-byte name field; nil if the length is past 64 or the filling is not
  /// zeros (one encoding per value, as §8 asks of every field).
  static func name(in field: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
    guard field.count == nameField + 1, let length = field.first.map(Int.init),
      length <= nameField
    else { return nil }
    let start = field.startIndex + 1
    guard field[(start + length)...].allSatisfy({ $0 == 0 }) else { return nil }
    return field[start..<start + length]
  }
}

extension TokenGrant {
  /// The grant as a token and a ticket write it: kind (1 channel, 2 login), name, uid (0
  /// for a login).
  var fields: (kind: UInt8, name: [UInt8], uid: UInt32) {
    switch self {
    case .channel(let channel, let uid): (TokenV2Layout.kindChannel, channel.bytes, uid)
    case .user(let user): (TokenV2Layout.kindLogin, user.bytes, 0)
    }
  }

  /// The grant of a kind, a name field (``TokenV2Layout/name(in:)``) and a uid; nil unless
  /// each is as its type allows and a login's uid is 0.
  init?(kind: UInt8, name field: ArraySlice<UInt8>, uid: UInt32) {
    guard let name = TokenV2Layout.name(in: field) else { return nil }
    switch kind {
    case TokenV2Layout.kindChannel:
      guard let channel = try? ChannelName(validating: name) else { return nil }
      self = .channel(channel, uid: uid)
    case TokenV2Layout.kindLogin where uid == 0:
      guard let user = try? UserID(validating: name) else { return nil }
      self = .user(user)
    default:
      return nil
    }
  }
}
