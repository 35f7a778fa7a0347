// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// One datagram for the loop to send.
public struct Outgoing: Equatable, Sendable {
  public var address: PeerAddress
  public var bytes: [UInt8]

  public init(address: PeerAddress, bytes: [UInt8]) {
    self.address = address
    self.bytes = bytes
  }
}

/// What the server has to send after one input, in order.
struct Outbox {
  private(set) var items: [Outgoing] = []

  mutating func send(_ message: Message, cookie: UInt64, to address: PeerAddress) {
    items.append(
      Outgoing(address: address, bytes: Packet(cookie: cookie, message: message).encoded))
  }

  /// Sends `template`, an encoded packet, with its cookie replaced by `cookie`.
  mutating func send(template: [UInt8], cookie: UInt64, to address: PeerAddress) {
    var bytes = template
    var shift = 56
    for index in 4..<Packet.headerSize {
      bytes[index] = UInt8(truncatingIfNeeded: cookie >> UInt64(shift))
      shift -= 8
    }
    items.append(Outgoing(address: address, bytes: bytes))
  }

  mutating func sendRaw(_ bytes: [UInt8], to address: PeerAddress) {
    items.append(Outgoing(address: address, bytes: bytes))
  }

  mutating func take() -> [Outgoing] {
    defer { items = [] }
    return items
  }

  /// `entries` as PRESENCE packets (cookie 0, to be replaced), at most
  /// ``PresenceDigest/maximumEntries`` entries each; none for no entries.
  static func presenceTemplates(_ entries: [PresenceEntry]) -> [[UInt8]] {
    var templates: [[UInt8]] = []
    var start = 0
    while start < entries.count {
      let end = min(start + PresenceDigest.maximumEntries, entries.count)
      // Cannot throw: the chunk is within the limit.
      if let digest = try? PresenceDigest(Array(entries[start..<end])) {
        templates.append(Packet(cookie: 0, message: .presence(digest)).encoded)
      }
      start = end
    }
    return templates
  }
}
