// SPDX-License-Identifier: Apache-2.0
/// What the server knows of a channel's members, in one datagram: a list of entries, each
/// a uid, what happened to it and how long since the server last heard from it.
///
/// The digest keeps the entries in their wire form and decodes them while iterating, so a
/// received digest costs no allocation: it shares the receive buffer. Decoding checks
/// every entry first, so iteration cannot fail.
public struct PresenceDigest: Equatable, Sendable, Sequence {
  /// At most this many entries fit in one datagram; a longer list is sent as several.
  public static let maximumEntries = (Packet.maximumSize - Packet.headerSize - 2) / entrySize
  static let entrySize = 9

  /// The entries' wire bytes: `count * entrySize` bytes, already validated.
  let storage: ArraySlice<UInt8>

  public var count: Int { storage.count / Self.entrySize }
  public var isEmpty: Bool { storage.isEmpty }

  /// Builds a digest to send.
  /// - Throws: ``WireError/oversized`` with more than ``maximumEntries`` entries.
  public init(_ entries: [PresenceEntry]) throws(WireError) {
    guard entries.count <= Self.maximumEntries else { throw .oversized }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(entries.count * Self.entrySize)
    for entry in entries {
      bytes.appendBigEndian(entry.uid)
      bytes.append(entry.kind.rawValue)
      bytes.appendBigEndian(entry.silentForMs)
    }
    storage = bytes[...]
  }

  /// Takes `count` entries from `reader`, checking each.
  init(reading reader: inout ByteReader) throws(WireError) {
    let count = Int(try reader.u16())
    guard count <= Self.maximumEntries else { throw .invalidField }
    let bytes = try reader.bytes(count * Self.entrySize)
    var index = bytes.startIndex + 4
    while index < bytes.endIndex {
      guard PresenceEntry.Kind(rawValue: bytes[index]) != nil else { throw .invalidField }
      index += Self.entrySize
    }
    storage = bytes
  }

  func write(into bytes: inout [UInt8]) {
    bytes.appendBigEndian(UInt16(truncatingIfNeeded: count))
    bytes.append(contentsOf: storage)
  }

  public func makeIterator() -> Iterator { Iterator(rest: storage) }

  public struct Iterator: IteratorProtocol {
    var rest: ArraySlice<UInt8>

    public mutating func next() -> PresenceEntry? {
      guard rest.count >= PresenceDigest.entrySize else { return nil }
      // Read in place: this runs for every member of every digest. The digest checked
      // every entry when it was built or decoded. Its nine bytes through one pointer: no
      // bounds check per byte (the count above covers them).
      let (uid, kindByte, silentForMs) = rest.withUnsafeBytes { bytes in
        (
          UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)), bytes[4],
          UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 5, as: UInt32.self))
        )
      }
      rest = rest.dropFirst(PresenceDigest.entrySize)
      guard let kind = PresenceEntry.Kind(rawValue: kindByte) else { return nil }
      return PresenceEntry(uid: uid, kind: kind, silentForMs: silentForMs)
    }
  }

  public static func == (lhs: PresenceDigest, rhs: PresenceDigest) -> Bool {
    lhs.storage.elementsEqual(rhs.storage)
  }
}

/// One member in a ``PresenceDigest``.
public struct PresenceEntry: Equatable, Sendable {
  public enum Kind: UInt8, CaseIterable, Sendable {
    /// The member joined (or was already there when the receiver joined).
    case joined = 1
    /// The member is in the channel; `silentForMs` says how recently it was heard.
    case alive = 2
    /// The member left the channel on purpose (QUIT).
    case left = 3
  }

  public var uid: UInt32
  public var kind: Kind
  /// Milliseconds since the server last heard from the member.
  public var silentForMs: UInt32

  public init(uid: UInt32, kind: Kind, silentForMs: UInt32) {
    self.uid = uid
    self.kind = kind
    self.silentForMs = silentForMs
  }
}
