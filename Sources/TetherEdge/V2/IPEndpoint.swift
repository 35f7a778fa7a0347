// SPDX-License-Identifier: Apache-2.0
/// A device's UDP address as protocol version 2 binds tickets and cookies to it
/// (docs/PROTOCOL.md §12.6): the IP address as 16 bytes (IPv6; IPv4 as `::ffff:a.b.c.d`)
/// and the port. One form for both families, so an IPv4 device behind a dual-stack socket
/// and the same device seen on an IPv4 socket make the same ticket and cookie.
public struct IPEndpoint: Hashable, Sendable {
  /// 16 bytes.
  public let ip: [UInt8]
  public let port: UInt16

  /// nil unless `ip` is 16 bytes.
  public init?(ip: [UInt8], port: UInt16) {
    guard ip.count == 16 else { return nil }
    self.ip = ip
    self.port = port
  }

  /// An IPv4 address (4 bytes), as `::ffff:a.b.c.d`; nil for another size.
  public init?(ipv4: [UInt8], port: UInt16) {
    guard ipv4.count == 4 else { return nil }
    self.init(ip: [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + ipv4, port: port)
  }

  /// The endpoint of a `sockaddr_in` (16 bytes, family 2) or `sockaddr_in6` (28 bytes,
  /// family 10, its flow label and scope left out), as the UDP loop gives them; nil for
  /// any other address (the simulation's short test addresses).
  public init?(peer: PeerAddress) {
    let bytes = peer.bytes
    guard bytes.count >= 4 else { return nil }
    let family = UInt16(bytes[0]) | UInt16(bytes[1]) << 8  // host order (little-endian)
    let port = UInt16(bytes[2]) << 8 | UInt16(bytes[3])  // network order
    switch (family, bytes.count) {
    case (2, 16): self.init(ipv4: Array(bytes[4..<8]), port: port)
    case (10, 28): self.init(ip: Array(bytes[8..<24]), port: port)
    default: return nil
    }
  }

  /// What the edge binds tickets and cookies to for `peer`: ``init(peer:)`` for a socket
  /// address; an address of at most 8 other bytes (the simulation's and the tests' short
  /// ones) inside the discard-only prefix `0100::/64` (RFC 6666), its length in the byte
  /// before it so no two map to one, port 0. Nil for anything else.
  public init?(binding peer: PeerAddress) {
    if let endpoint = IPEndpoint(peer: peer) {
      self = endpoint
      return
    }
    let bytes = peer.bytes
    guard bytes.count <= 8 else { return nil }
    var ip: [UInt8] = [0x01, 0, 0, 0, 0, 0, 0, UInt8(bytes.count)] + bytes
    ip.append(contentsOf: repeatElement(0, count: 16 - ip.count))
    self.init(ip: ip, port: 0)
  }

  /// `ip ‖ port` (18 bytes): what the ticket stores and the cookie is made of.
  public var bytes: [UInt8] {
    var out = ip
    out.appendBigEndian(port)
    return out
  }
}
