// SPDX-License-Identifier: Apache-2.0
/// What a session asks its driver to do, in order: datagrams to send and notifications to
/// deliver. The session appends; the driver performs the actions and calls
/// ``removeAll()``, which keeps the storage, so a steady session reuses the same memory
/// for every heartbeat. Both profiles use it, each with its own notifications.
public struct SessionOutput<Notification> {
  /// The actions in order (``actions`` reads them as ``SessionAction``s): a send is an entry
  /// with `slot` -1 and its bytes at `key ..< payload` of ``bytes``; a notification one with
  /// `slot` its index in `notes`. Held apart from the notifications, in the element type of
  /// the heaps (``OutputEntry``), so that the walks over the actions (the driver's, and
  /// protocol version 2's layer's, which replaces the datagrams a session wrote) and their
  /// storage exist once for both profiles; an array of `SessionAction<Notification>` was
  /// one copy of each per profile (`make lib-aarch64`, docs/PROTOCOL.md §12.16).
  var entries: [OutputEntry] = []
  /// The notifications, in order; each is an entry's.
  var notes: [Notification] = []
  /// The encoded datagrams, back to back; a send's entry points into it.
  public internal(set) var bytes: [UInt8] = []

  public init() {
    entries.reserveCapacity(16)
    notes.reserveCapacity(16)
    bytes.reserveCapacity(2 * Packet.maximumSize)
  }

  /// Every action, in order (tests and logs: the library reads them by index).
  public var actions: [SessionAction<Notification>] {
    entries.map { entry in
      if let range = entry.sendRange {
        .send(Datagram(range: range))
      } else {
        .notify(notes[Int(entry.slot)])
      }
    }
  }

  /// How many actions the output holds.
  public var actionCount: Int { entries.count }

  /// Action `index`: the bytes to send if it is a datagram; nil for a notification
  /// (``notification(at:)``).
  public func datagram(at index: Int) -> ArraySlice<UInt8>? {
    OutputEntry.datagram(at: index, entries: entries, bytes: bytes)
  }

  /// Action `index`, a notification.
  public func notification(at index: Int) -> Notification { notes[Int(entries[index].slot)] }

  public mutating func removeAll() {
    // One at a time, keeping the storage: `removeAll(keepingCapacity:)` is a
    // replaceSubrange specialization per element type, this a small popLast (a step sends
    // a few dozen bytes, a JOIN at most a few hundred).
    OutputEntry.removeAll(entries: &entries, bytes: &bytes)
    while notes.popLast() != nil {}
  }

  /// The bytes of one datagram of this output.
  public func bytes(of datagram: Datagram) -> ArraySlice<UInt8> { bytes[datagram.range] }

  /// The notifications only, in order (tests and logs).
  public var notifications: [Notification] { notes }

  /// The datagrams only, in order.
  public var datagrams: [ArraySlice<UInt8>] {
    entries.compactMap { entry in entry.sendRange.map { bytes[$0] } }
  }

  /// Called from every step of a session: the encoding and the entry are one non-generic
  /// copy for both profiles.
  mutating func send(_ packet: Packet) {
    OutputEntry.send(packet, entries: &entries, bytes: &bytes)
  }

  @inline(never)  // called from every step of a session: one copy of the append
  mutating func notify(_ notification: Notification) {
    OutputEntry.noted(notes.count, entries: &entries)
    notes.append(notification)
  }

  /// The datagram written at the end of ``bytes`` from `start` sent (protocol version 2's
  /// layer writes its own datagrams); nothing if none was written.
  mutating func sendWritten(from start: Int) {
    OutputEntry.sendWritten(from: start, entries: &entries, bytes: bytes)
  }
}

/// One action of a ``SessionOutput``: a heap's entry (``SlotHeap/Entry``), for its element
/// type's code, which the library holds already.
typealias OutputEntry = SlotHeap.Entry

extension SlotHeap.Entry {
  /// A notification's entry: `slot` its index among the output's notifications.
  init(slot: Int32) { self.init(key: 0, payload: 0, slot: slot) }

  /// A send's entry, of the bytes at `range`.
  init(sending range: Range<Int>) {
    self.init(
      key: UInt64(truncatingIfNeeded: range.lowerBound),
      payload: UInt64(truncatingIfNeeded: range.upperBound), slot: -1)
  }

  /// The bytes a send's entry points at; nil for a notification's.
  var sendRange: Range<Int>? {
    slot < 0 ? Int(truncatingIfNeeded: key)..<Int(truncatingIfNeeded: payload) : nil
  }

  @inline(never)  // one copy for both profiles
  static func datagram(at index: Int, entries: [OutputEntry], bytes: [UInt8])
    -> ArraySlice<UInt8>?
  {
    entries[index].sendRange.map { bytes[$0] }
  }

  @inline(never)  // one copy for both profiles
  static func removeAll(entries: inout [OutputEntry], bytes: inout [UInt8]) {
    while entries.popLast() != nil {}
    while bytes.popLast() != nil {}
  }

  @inline(never)  // one copy of the encode and append for both profiles
  static func send(_ packet: Packet, entries: inout [OutputEntry], bytes: inout [UInt8]) {
    let start = bytes.count
    packet.encodeAsClient(into: &bytes)
    entries.append(OutputEntry(sending: start..<bytes.count))
  }

  @inline(never)  // one copy for both profiles
  static func noted(_ index: Int, entries: inout [OutputEntry]) {
    entries.append(OutputEntry(slot: Int32(truncatingIfNeeded: index)))
  }

  @inline(never)  // one copy for every caller
  static func sendWritten(from start: Int, entries: inout [OutputEntry], bytes: [UInt8]) {
    if bytes.count > start { entries.append(OutputEntry(sending: start..<bytes.count)) }
  }
}

/// The channel session's output.
public typealias ChannelOutput = SessionOutput<ChannelNotification>
/// One action of a channel session.
public typealias ChannelAction = SessionAction<ChannelNotification>

public enum SessionAction<Notification> {
  /// Send these bytes of ``SessionOutput/bytes`` to the edge server.
  case send(Datagram)
  /// Deliver this to the app.
  case notify(Notification)
}

extension SessionAction: Equatable where Notification: Equatable {}
extension SessionAction: Sendable where Notification: Sendable {}

/// A datagram inside a ``SessionOutput``.
public struct Datagram: Equatable, Sendable {
  public let range: Range<Int>
}
