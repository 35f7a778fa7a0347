// SPDX-License-Identifier: Apache-2.0
/// What an observer on the path can tell of a protocol version 2 datagram (docs/PROTOCOL.md
/// §12.2, §12.7) without any key: its kind, and for sealed DATA its direction and size,
/// which name the message in most cases (docs/SECURITY.md: sizes are not protected). The
/// fault proxy keys its dice and its log on the version 1 type byte each shape stands for,
/// so its rules ("an answer proves the round trip") read as they did.
enum WireShape {
  /// The kind byte of a CONFIRM and of a DATA datagram (§12.2).
  static let confirmKind: UInt8 = 0x03
  static let dataKind: UInt8 = 0x07

  /// The version 1 type of `bytes` travelling in `direction`; 0 for a shape that names
  /// none (a size no message of that direction has).
  static func type(of bytes: [UInt8], _ direction: FaultDirection) -> UInt8 {
    guard let kind = bytes.first else { return 0 }
    switch (kind, direction) {
    case (0x01, .uplink), (0x03, .uplink): return 0x01  // INIT, or CONFIRM again: a join
    case (0x02, .downlink): return 0x02 | 0x80  // RESPONSE: half an answer, not one
    case (0x05, .downlink), (0x06, .downlink): return 0x82  // a refusal of the handshake
    case (0x08, .downlink): return 0x87  // RESET: what SESSION_UNKNOWN was
    case (0x07, .uplink): return uplinkData(size: bytes.count)
    case (0x07, .downlink): return downlinkData(size: bytes.count)
    default: return 0
    }
  }

  /// A device's DATA by its size: 42 is a HEARTBEAT (or a LEAVE, LOGOUT or PATH_RESPONSE,
  /// all padded to it), 46 a LOGIN_HEARTBEAT, 107 a CHANNEL_OPERATION, 253 a RENEW_TOKEN.
  private static func uplinkData(size: Int) -> UInt8 {
    switch size {
    case 42: 0x02
    case 46: 0x06
    case 107: 0x08
    case 253: 0x04
    default: 0
    }
  }

  /// An edge's DATA by its size: 67 an ACCEPT or LOGIN_ACCEPT, 46 a HEARTBEAT_ACK, 39 a
  /// TOKEN_RENEWED, 42 a CHANNEL_ACK (or a PATH_CHALLENGE), 35 a KICK, 34 a TOKEN_EXPIRED;
  /// anything else a PRESENCE or MEMBER_EVENTS, whose sizes grow with their entries (one
  /// of those may take an answer's size by chance: a proxy's guess, not a proof).
  private static func downlinkData(size: Int) -> UInt8 {
    switch size {
    case 67: 0x81
    case 46: 0x83
    case 39: 0x88
    case 42: 0x8C
    case 35: 0x85
    case 34: 0x86
    default: 0x84
    }
  }
}
