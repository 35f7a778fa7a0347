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

/// What the server has to send after one input, in order, before it is written for the
/// wire: what a session is sent is written once the input is handled, sealed under its
/// session's keys (EdgeServer+Secure.swift), so no place that sends needs to know them.
struct Outbox {
  enum Item {
    /// `message` to the session under `cookie`.
    case message(Message, cookie: UInt64, address: PeerAddress)
    /// An encoded version 1 packet (cookie 0) for the session under `cookie`: one encoding
    /// of a digest serves every member.
    case template([UInt8], cookie: UInt64, address: PeerAddress)
    /// A refused CONFIRM: a sealed REFUSE or LOGIN_REFUSE.
    case refusal(Refusal, SessionKind, cookie: UInt64, address: PeerAddress)
    /// Bytes as they are (an admin answer).
    case raw(Outgoing)
  }

  private(set) var items: [Item] = []

  mutating func send(_ message: Message, cookie: UInt64, to address: PeerAddress) {
    items.append(.message(message, cookie: cookie, address: address))
  }

  /// Sends `template`, an encoded packet, with its cookie replaced by `cookie`.
  mutating func send(template: [UInt8], cookie: UInt64, to address: PeerAddress) {
    items.append(.template(template, cookie: cookie, address: address))
  }

  mutating func send(
    _ refusal: Refusal, _ kind: SessionKind, cookie: UInt64, to address: PeerAddress
  ) {
    items.append(.refusal(refusal, kind, cookie: cookie, address: address))
  }

  mutating func sendRaw(_ bytes: [UInt8], to address: PeerAddress) {
    items.append(.raw(Outgoing(address: address, bytes: bytes)))
  }

  mutating func take() -> [Item] {
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
