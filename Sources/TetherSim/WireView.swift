// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// How the world reads protocol version 2's datagrams as the version 1 packets they stand
/// for (docs/PROTOCOL.md §12.2, §12.7), without any key: a DATA datagram's payload comes
/// from the oracle's journal (``NonceOracle/payload(of:)``: what was sealed in the step just
/// taken), and the cookie is the client's own (which never crosses the wire). The handshake's
/// datagrams stand for no version 1 packet but the device's JOIN or LOGIN (which the caller
/// supplies); a RESET stands for SESSION_UNKNOWN.
enum WireView {
  static let initKind: UInt8 = 0x01
  static let confirmKind: UInt8 = 0x03
  static let dataKind: UInt8 = 0x07
  static let resetKind: UInt8 = 0x08

  /// The session id a CONFIRM, a DATA datagram or a RESET names (bytes 1 ..< 9).
  static func sessionID(_ bytes: [UInt8]) -> UInt64? {
    guard let kind = bytes.first, kind == confirmKind || kind == dataKind || kind == resetKind,
      bytes.count >= 9
    else { return nil }
    return bytes[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// The version 1 packet a device's datagram stands for, from what its session sent: an
  /// INIT or CONFIRM its last JOIN or LOGIN (`attempt`), a DATA datagram its payload's
  /// message under that attempt's cookie (a RENEW_TOKEN: its last, `renewal`).
  static func packet(
    of bytes: [UInt8], attempt: Packet?, renewal: () -> Message?, oracle: NonceOracle
  ) -> Packet? {
    guard let attempt else { return nil }
    switch bytes.first {
    case initKind, confirmKind: return attempt
    case dataKind:
      guard let payload = oracle.payload(of: bytes[...]),
        let message = message(payload: payload, fromDevice: true, renewal: renewal())
      else { return nil }
      return Packet(cookie: attempt.cookie, message: message)
    default: return nil
    }
  }

  /// The version 1 message of a DATA payload (type, then body). The device pads its bodies
  /// (§12.7: at least 8 bytes, a channel name to 63), so its bodies are cut back to their
  /// version 1 length; the edge adds a reset value to ACCEPT and LOGIN_ACCEPT and a detail to
  /// its refusals, which version 1 does not have. A device's RENEW_TOKEN carries the new
  /// token's `W`, not its text: it stands for `renewal`, the session's own RENEW_TOKEN.
  static func message(payload: [UInt8], fromDevice: Bool, renewal: Message?) -> Message? {
    guard let type = payload.first else { return nil }
    var body = Array(payload.dropFirst())
    let keep: Int?
    switch (fromDevice, type) {
    case (true, 0x02): keep = 4  // HEARTBEAT: sequence
    case (true, 0x03), (true, 0x07): keep = 0  // LEAVE, LOGOUT
    case (true, 0x04): return renewal
    case (true, 0x08): keep = body.count > 9 ? 10 + Int(body[9]) : nil  // CHANNEL_OPERATION
    case (true, 0x09): return nil  // PATH_RESPONSE: the layer's own
    case (false, 0x81), (false, 0x89): keep = body.count - 16  // the reset value
    case (false, 0x82), (false, 0x8A): keep = body.count - 1  // the detail
    default: keep = body.count
    }
    guard let keep, keep >= 0, keep <= body.count else { return nil }
    body.removeLast(body.count - keep)
    let header: [UInt8] = [0x54, 0x48, 0x01, type] + [UInt8](repeating: 0, count: 8)
    return (try? Packet.decode((header + body)[...]))?.message
  }
}
