// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What a device's DATA payload holds (docs/PROTOCOL.md §12.7, the payload table): a type
/// byte, then the body, read with §8's strictness (exact sizes, padding and reserved bytes
/// zero, one encoding per value). Every device payload is at least 9 bytes, so a device's
/// DATA datagram is at least 42 (§12.13). Visible to the package: fuzz-decode feeds it any
/// bytes (Fuzz/decode).
package enum DevicePayload: Equatable {
  /// HEARTBEAT, LEAVE, LOGIN_HEARTBEAT, LOGOUT or CHANNEL_OPERATION: the version 1 message
  /// it stands for, handled as that session's version 1 packet would be.
  case message(Message)
  /// RENEW_TOKEN: `W` of the new token (219 bytes).
  case renewToken([UInt8])
  /// PATH_RESPONSE: the challenge's 8 bytes (§12.11).
  case pathResponse([UInt8])

  /// Nil for anything that is not exactly one device payload.
  package init?(decoding payload: ArraySlice<UInt8>) {
    guard let type = payload.first else { return nil }
    var reader = ByteReader(payload.dropFirst())
    switch (type, payload.count) {
    case (0x02, 9):  // HEARTBEAT: sequence, 4 zero bytes
      guard let sequence = try? reader.u32(), Self.zeros(&reader, 4) else { return nil }
      self = .message(.heartbeat(sequence: sequence))
    case (0x03, 9):  // LEAVE: 8 zero bytes
      guard Self.zeros(&reader, 8) else { return nil }
      self = .message(.leave)
    case (0x04, 220):  // RENEW_TOKEN: W
      self = .renewToken(Array(payload.dropFirst()))
    case (0x06, 13):  // LOGIN_HEARTBEAT: sequence, server session, events received
      guard let sequence = try? reader.u32(), let session = try? reader.u32(),
        let received = try? reader.u32()
      else { return nil }
      self = .message(
        .loginHeartbeat(sequence: sequence, session: session, eventsReceived: received))
    case (0x07, 9):  // LOGOUT: 8 zero bytes
      guard Self.zeros(&reader, 8) else { return nil }
      self = .message(.logout)
    case (0x08, 74):  // CHANNEL_OPERATION: session, sequence, kind, name length, name to 63
      guard let session = try? reader.u32(), let sequence = try? reader.u32(),
        let kind = (try? reader.u8()).flatMap(ChannelOperation.Kind.init(rawValue:)),
        let length = (try? reader.u8()).map(Int.init), (1...63).contains(length),
        let name = try? reader.bytes(length),
        let channel = try? ChannelName(validating: name), Self.zeros(&reader, 63 - length)
      else { return nil }
      self = .message(
        .channelOperation(
          ChannelOperation(session: session, sequence: sequence, kind: kind, channel: channel)))
    case (0x09, 9):  // PATH_RESPONSE
      self = .pathResponse(Array(payload.dropFirst()))
    default:
      return nil
    }
  }

  /// Whether the next `count` bytes are zeros and the last of the payload.
  private static func zeros(_ reader: inout ByteReader, _ count: Int) -> Bool {
    guard let bytes = try? reader.bytes(count), bytes.allSatisfy({ $0 == 0 }) else {
      return false
    }
    return (try? reader.expectEnd()) != nil
  }
}

/// The payloads the edge seals for a device (§12.7): the version 1 message's type byte and
/// body, so one encoder serves both versions, with version 2's additions: the reset value
/// after an ACCEPT or LOGIN_ACCEPT, and the detail after a REFUSE or LOGIN_REFUSE.
enum EdgePayload {
  /// The most a DATA datagram carries: 1,200 bytes less its header (17) and tag (16).
  static var capacity: Int { Packet.maximumSize - 33 }
  /// PRESENCE entries in one payload: type, count, 9 bytes each (129, where version 1's
  /// 12-byte header leaves room for 131).
  static var presenceEntries: Int { (capacity - 3) / 9 }
  /// MEMBER_EVENTS entry bytes in one payload: type, session, first sequence, count, then
  /// the entries (1,157, where version 1 leaves 1,179).
  static var memberEventBytes: Int { capacity - 10 }

  /// The payloads of `message`, each within ``capacity``: one, but for a PRESENCE or
  /// MEMBER_EVENTS that version 1's smaller header fits in one datagram and version 2's
  /// does not, which goes out split (as version 1 splits a longer one).
  static func payloads(of message: Message, resetValue: [UInt8]) -> [[UInt8]] {
    guard case .memberEvents(let batch) = message else {
      return payloads(of: of(message, resetValue: resetValue))
    }
    return split(batch).map { of(.memberEvents($0), resetValue: resetValue) }
  }

  /// `payload` as payloads within ``capacity``: a PRESENCE is split by entries; anything
  /// else is one.
  static func payloads(of payload: [UInt8]) -> [[UInt8]] {
    guard payload.count > capacity, payload.first == 0x84 else { return [payload] }
    var out: [[UInt8]] = []
    var start = 3
    while start < payload.count {
      let end = min(start + presenceEntries * 9, payload.count)
      let count = (end - start) / 9
      out.append([0x84, UInt8(count >> 8), UInt8(count & 0xFF)] + payload[start..<end])
      start = end
    }
    return out
  }

  /// `batch` as batches whose entries take at most ``memberEventBytes``, numbered on.
  static func split(_ batch: MemberEvents) -> [MemberEvents] {
    var batches: [MemberEvents] = []
    var entries: [MemberEvent.Entry] = []
    var size = 0
    var first = batch.firstSequence
    func flush() {
      if let made = try? MemberEvents(
        session: batch.session, firstSequence: first, entries: entries)
      {
        batches.append(made)
      }
    }
    for event in batch {
      // The batch checked both names when it was made.
      guard let channel = try? ChannelName(validating: event.channel),
        let user = try? UserID(validating: event.userID)
      else { continue }
      let bytes = MemberEvents.entrySize(channel: channel, userID: user)
      if size + bytes > memberEventBytes, !entries.isEmpty {
        flush()
        entries = []
        size = 0
        first = event.sequence
      }
      entries.append(MemberEvent.Entry(kind: event.kind, channel: channel, userID: user))
      size += bytes
    }
    flush()
    return batches
  }

  /// `message` to a session whose reset value is `resetValue`.
  static func of(_ message: Message, resetValue: [UInt8]) -> [UInt8] {
    var payload = of(template: Packet(cookie: 0, message: message).encoded)
    switch message {
    case .accept, .loginAccept: payload.append(contentsOf: resetValue)
    default: break
    }
    return payload
  }

  /// PATH_CHALLENGE's type (§12.7): then the challenge's 8 bytes (§12.11).
  static var pathChallenge: UInt8 { 0x8D }

  /// The payload of an encoded version 1 packet: its type byte and body.
  static func of(template: [UInt8]) -> [UInt8] {
    guard template.count >= Packet.headerSize else { return [] }
    return [template[3]] + template[Packet.headerSize...]
  }

  /// REFUSE (`0x82`) or LOGIN_REFUSE (`0x8A`) with version 2's reason and detail.
  static func of(_ refusal: Refusal, _ kind: SessionKind) -> [UInt8] {
    let (reason, detail) = refusal.secureAnswer(kind)
    return [kind == .channel ? 0x82 : 0x8A, reason, detail]
  }
}
