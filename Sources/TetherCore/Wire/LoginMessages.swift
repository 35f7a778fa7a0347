// SPDX-License-Identifier: Apache-2.0
/// The bodies of the login profile's messages (docs/PROTOCOL.md, "Login sessions").

/// The body of ``Message/login(_:)``.
public struct LoginRequest: Equatable, Sendable {
  public var appID: AppID
  public var userID: UserID
  public var token: Token
  /// True when the client was logged in under this cookie and is reconnecting: a server
  /// that still holds the session resumes it (and moves it to the sender's address).
  public var isRelogin: Bool

  public init(appID: AppID, userID: UserID, token: Token, isRelogin: Bool) {
    self.appID = appID
    self.userID = userID
    self.token = token
    self.isRelogin = isRelogin
  }
}

/// The body of ``Message/loginAccept(_:)``.
public struct LoginAccept: Equatable, Sendable {
  /// The server's clock, in milliseconds since its own epoch (informational).
  public var serverTimeMs: UInt64
  /// Milliseconds until the token expires, from when the server sent this; 0: never.
  public var tokenTimeLeftMs: UInt32
  /// True when the server still held the session (within its online grace): its channels
  /// and its place in them were kept, and the other members noticed nothing.
  public var resumed: Bool
  /// Which server session this is: the same when resumed, another for a new one. MEMBER_EVENTS
  /// and CHANNEL_ACK carry it, so a late datagram of an earlier server session (numbered
  /// from 1 too) is not taken for the new one's.
  public var session: UInt32

  public init(serverTimeMs: UInt64, tokenTimeLeftMs: UInt32, resumed: Bool, session: UInt32 = 0) {
    self.serverTimeMs = serverTimeMs
    self.tokenTimeLeftMs = tokenTimeLeftMs
    self.resumed = resumed
    self.session = session
  }
}

/// The body of ``Message/channelOperation(_:)``: join or leave one channel. Operations are
/// numbered from 1 in each server session, and name it; the server applies them in order,
/// once each, only in the session they name, and acknowledges the highest it applied
/// (``Message/channelAck(session:sequence:)``).
public struct ChannelOperation: Equatable, Sendable {
  public enum Kind: UInt8, CaseIterable, Sendable {
    case join = 1
    case leave = 2
  }

  /// The server session it is numbered in (``LoginAccept/session``).
  public var session: UInt32
  public var sequence: UInt32
  public var kind: Kind
  public var channel: ChannelName

  public init(session: UInt32 = 0, sequence: UInt32, kind: Kind, channel: ChannelName) {
    self.session = session
    self.sequence = sequence
    self.kind = kind
    self.channel = channel
  }
}

/// Membership changes of other users in the channels of a login session, numbered from 1
/// in each server session so the client can drop repeats and ask for what it missed (its
/// heartbeat says how many it has). Like ``PresenceDigest`` it keeps its entries in wire
/// form: a received batch shares the receive buffer, and iterating it cannot fail.
public struct MemberEvents: Equatable, Sendable, Sequence {
  /// The server session the events belong to (``LoginAccept/session``).
  public let session: UInt32
  /// The sequence number of the first entry.
  public let firstSequence: UInt32
  /// The entries' wire bytes, already validated.
  let storage: ArraySlice<UInt8>
  public let count: Int

  /// Room for entries in one datagram: the packet's maximum less its header and the
  /// batch's own 9 bytes.
  public static let capacity = Packet.maximumSize - Packet.headerSize - 9

  /// The bytes one entry takes on the wire.
  public static func entrySize(channel: ChannelName, userID: UserID) -> Int {
    3 + channel.bytes.count + userID.bytes.count
  }

  /// Builds a batch to send.
  /// - Throws: ``WireError/oversized`` if the entries take more than ``capacity`` bytes
  ///   or number more than 255; ``WireError/invalidField`` if there are none.
  public init(session: UInt32 = 0, firstSequence: UInt32, entries: [MemberEvent.Entry])
    throws(WireError)
  {
    guard !entries.isEmpty else { throw .invalidField }
    guard entries.count <= 255 else { throw .oversized }
    var bytes: [UInt8] = []
    for entry in entries {
      bytes.appendByte(entry.kind.rawValue)
      bytes.appendPrefixed(entry.channel.bytes, lengthWidth: 1)
      bytes.appendPrefixed(entry.userID.bytes, lengthWidth: 1)
    }
    guard bytes.count <= Self.capacity else { throw .oversized }
    self.session = session
    self.firstSequence = firstSequence
    self.count = entries.count
    storage = bytes[...]
  }

  /// Takes a batch from `reader`, checking every entry.
  init(reading reader: inout ByteReader) throws(WireError) {
    session = try reader.u32()
    firstSequence = try reader.u32()
    count = Int(try reader.u8())
    guard count > 0 else { throw .invalidField }
    let start = reader.rest
    for _ in 0..<count {
      guard MemberEvent.Kind(rawValue: try reader.u8()) != nil else { throw .invalidField }
      _ = try reader.prefixed(
        lengthWidth: 1, allowed: ChannelName.allowed, lengths: ChannelName.lengths)
      _ = try reader.prefixed(lengthWidth: 1, allowed: UserID.allowed, lengths: UserID.lengths)
    }
    // Index arithmetic, not prefix: no Collection specialization for it.
    storage = start[start.startIndex..<reader.rest.startIndex]
  }

  func write(into bytes: inout [UInt8]) {
    bytes.appendBigEndian(session)
    bytes.appendBigEndian(firstSequence)
    bytes.appendByte(UInt8(truncatingIfNeeded: count))
    bytes.append(contentsOf: storage)
  }

  public func makeIterator() -> Iterator {
    Iterator(sequence: firstSequence, reader: ByteReader(storage))
  }

  public struct Iterator: IteratorProtocol {
    var sequence: UInt32
    var reader: ByteReader

    public mutating func next() -> MemberEvent? {
      // The batch checked every entry when it was built or decoded.
      guard let raw = try? reader.u8(), let kind = MemberEvent.Kind(rawValue: raw),
        let channel = try? reader.prefixed(lengthWidth: 1),
        let userID = try? reader.prefixed(lengthWidth: 1)
      else { return nil }
      defer { sequence &+= 1 }
      return MemberEvent(sequence: sequence, kind: kind, channel: channel, userID: userID)
    }
  }

  public static func == (lhs: MemberEvents, rhs: MemberEvents) -> Bool {
    lhs.session == rhs.session && lhs.firstSequence == rhs.firstSequence
      && lhs.count == rhs.count
      && lhs.storage.elementsEqual(rhs.storage)
  }
}

/// One entry of ``MemberEvents``: another user joined or left a channel. The names are
/// the datagram's bytes, already checked against ``ChannelName`` and ``UserID``'s rules.
public struct MemberEvent: Equatable, Sendable {
  public enum Kind: UInt8, CaseIterable, Sendable {
    case joined = 1
    case left = 2
  }

  /// What a server puts in a batch.
  public struct Entry: Equatable, Sendable {
    public var kind: Kind
    public var channel: ChannelName
    public var userID: UserID

    public init(kind: Kind, channel: ChannelName, userID: UserID) {
      self.kind = kind
      self.channel = channel
      self.userID = userID
    }
  }

  public var sequence: UInt32
  public var kind: Kind
  public var channel: ArraySlice<UInt8>
  public var userID: ArraySlice<UInt8>

  public static func == (lhs: MemberEvent, rhs: MemberEvent) -> Bool {
    lhs.sequence == rhs.sequence && lhs.kind == rhs.kind
      && lhs.channel.elementsEqual(rhs.channel) && lhs.userID.elementsEqual(rhs.userID)
  }
}
