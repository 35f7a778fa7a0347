// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What one record of the fleet's bucket is about, and its key there. Channel names and
/// user ids never reach the bus as they are (a channel name may hold a space, `*`, `>` or
/// `.`, which NATS refuses in a key or gives a meaning): ``FleetName/encode(_:)`` writes
/// them in the characters a key allows.
///
/// - `c.<channel>.<uid>`: a uid in a channel (the channel profile's member and identity:
///   the same uid in one channel is one session in the whole fleet);
/// - `u.<user id>`: a login session's user id (its identity);
/// - `l.<channel>.<user id>`: a user id in a login channel.
enum FleetKey: Hashable {
  case member(ChannelName, uid: UInt32)
  case user(UserID)
  case loginMember(ChannelName, UserID)

  var key: String {
    switch self {
    case .member(let channel, let uid): "c.\(FleetName.encode(channel.bytes)).\(uid)"
    case .user(let user): "u.\(FleetName.encode(user.bytes))"
    case .loginMember(let channel, let user):
      "l.\(FleetName.encode(channel.bytes)).\(FleetName.encode(user.bytes))"
    }
  }

  /// The key `text` names, or nil for one that no edge writes (another fleet's, or a
  /// damaged one: the bus is trusted, yet what it carries is checked as a datagram is).
  init?(_ text: String) {
    let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard let kind = parts.first, kind.count == 1 else { return nil }
    switch (kind.first, parts.count) {
    case (UInt8(ascii: "c"), 3):
      guard let bytes = FleetName.decode(parts[1]),
        let channel = try? ChannelName(validating: bytes),
        let uid = FleetName.decimal(parts[2])
      else { return nil }
      self = .member(channel, uid: uid)
    case (UInt8(ascii: "u"), 2):
      guard let bytes = FleetName.decode(parts[1]), let user = try? UserID(validating: bytes)
      else { return nil }
      self = .user(user)
    case (UInt8(ascii: "l"), 3):
      guard let channelBytes = FleetName.decode(parts[1]),
        let channel = try? ChannelName(validating: channelBytes),
        let userBytes = FleetName.decode(parts[2]), let user = try? UserID(validating: userBytes)
      else { return nil }
      self = .loginMember(channel, user)
    default:
      return nil
    }
    // One spelling per key: a key decoded from another spelling is not this key.
    guard key == text else { return nil }
  }

  /// The channel a member record is about (nil for a user id's).
  var channel: ChannelName? {
    switch self {
    case .member(let channel, _), .loginMember(let channel, _): channel
    case .user: nil
    }
  }
}

/// Bytes written in the characters a NATS key and a subject token both allow, one spelling
/// each: `A-Z a-z 0-9 - _` stand for themselves, every other byte is `=` and two upper-case
/// hex digits.
enum FleetName {
  static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    var text: [UInt8] = []
    for byte in bytes {
      if isPlain(byte) {
        text.append(byte)
      } else {
        text += [UInt8(ascii: "="), hex(byte >> 4), hex(byte & 0x0F)]
      }
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// The bytes `text` spells, or nil if it is not a spelling ``encode(_:)`` makes.
  static func decode<Text: Collection<UInt8>>(_ text: Text) -> [UInt8]? {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index != text.endIndex {
      let byte = text[index]
      index = text.index(after: index)
      if isPlain(byte) {
        bytes.append(byte)
        continue
      }
      guard byte == UInt8(ascii: "="), index != text.endIndex else { return nil }
      let high = text[index]
      index = text.index(after: index)
      guard index != text.endIndex, let h = nibble(high), let l = nibble(text[index]) else {
        return nil
      }
      index = text.index(after: index)
      let decoded = h << 4 | l
      guard !isPlain(decoded) else { return nil }
      bytes.append(decoded)
    }
    return bytes
  }

  /// A decimal UInt32 with no sign, no leading zero (but "0") and no overflow.
  static func decimal<Text: Collection<UInt8>>(_ text: Text) -> UInt32? {
    guard text.first != UInt8(ascii: "0") || text.count == 1,
      let value = FleetText.parseDecimal(text)
    else { return nil }
    return UInt32(exactly: value)
  }

  private static func isPlain(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
      true
    default: false
    }
  }

  private static func hex(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
  }

  private static func nibble(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
