// SPDX-License-Identifier: Apache-2.0
/// What a session asks its driver to do, in order: datagrams to send and notifications to
/// deliver. The session appends; the driver performs the actions and calls
/// ``removeAll()``, which keeps the storage, so a steady session reuses the same memory
/// for every heartbeat. Both profiles use it, each with its own notifications.
///
/// A session sends a ``Packet`` (version 1's message and its session cookie), kept as it
/// is: protocol version 2's layer (``SecureLink``) takes each one and puts version 2's
/// datagram in its place, written into ``bytes``, which is what the driver sends. So the
/// device's library holds no encoder of version 1's datagrams, nor a parser of them for
/// the layer (issue 25, docs/PROTOCOL.md §12.16). Read without the layer (tests, the
/// simulation's record of what a session wrote), a packet not yet replaced reads as
/// version 1's encoding of it (``bytes(of:)``, ``datagrams``).
public struct SessionOutput<Notification> {
  /// The actions in order (``actions`` reads them as ``SessionAction``s): a datagram is an
  /// entry with `slot` -1 and its bytes at `key ..< payload` of ``bytes``; a packet not yet
  /// replaced one with `slot` -2 and `key` its index in `packets`; a notification one with
  /// `slot` its index in `notes`. Held apart from the notifications, in the element type of
  /// the heaps (``OutputEntry``), so that the walks over the actions (the driver's, and
  /// protocol version 2's layer's) and their storage exist once for both profiles; an array
  /// of `SessionAction<Notification>` was one copy of each per profile (`make lib-aarch64`,
  /// docs/PROTOCOL.md §12.16).
  var entries: [OutputEntry] = []
  /// The notifications, in order; each is an entry's. Kept as one element type for both
  /// profiles (``OutputNotification``), so that the array's code (growth, moves, removal)
  /// and ``removeAll()`` exist once; an array of each profile's own was one copy of each
  /// per profile (docs/PROTOCOL.md §12.16).
  var notes: [OutputNotification] = []
  /// The packets the session sent, in order (the first `packetCount`); each is an entry's
  /// until the layer replaces it. The rest (of the steps before) are dropped at the next
  /// send, so that emptying the output is the same non-generic code for both profiles.
  var packets: [Packet] = []
  var packetCount = 0
  /// The datagrams written for sending, back to back; a datagram's entry points into it.
  public internal(set) var bytes: [UInt8] = []

  public init() {
    // The notifications' storage is made by the first one and kept (``removeAll()`` keeps
    // it): reserving it here was a specialization per profile (272 bytes of aarch64 text).
    OutputEntry.reserve(entries: &entries, packets: &packets, bytes: &bytes)
  }

  /// How many actions the output holds.
  public var actionCount: Int { entries.count }

  /// Action `index`: the bytes to send if it is a datagram; nil for a notification
  /// (``notification(at:)``). The driver reads the output only after the layer replaced
  /// every packet (``SecureLink/secure(_:from:session:now:)``); a packet not replaced reads
  /// as no bytes.
  public func datagram(at index: Int) -> ArraySlice<UInt8>? {
    OutputEntry.datagram(at: index, entries: entries, bytes: bytes)
  }

  /// Action `index`, a notification as the output keeps it (nil for a datagram's): what
  /// the driver hands the app's callbacks.
  public func keptNotification(at index: Int) -> OutputNotification? {
    let slot = entries[index].slot
    return slot >= 0 ? notes[Int(slot)] : nil
  }

  public mutating func removeAll() {
    // One at a time, keeping the storage: `removeAll(keepingCapacity:)` is a
    // replaceSubrange specialization per element type, this a small popLast (a step sends
    // a few dozen bytes, a JOIN at most a few hundred).
    OutputEntry.removeAll(entries: &entries, bytes: &bytes, notes: &notes)
    packetCount = 0
  }

  /// The bytes of one datagram of this output: for a packet not replaced, version 1's
  /// encoding of it.
  public func bytes(of datagram: Datagram) -> ArraySlice<UInt8> {
    if datagram.packet >= 0 { return packets[datagram.packet].encoded[...] }
    return bytes[datagram.range]
  }

  /// The datagrams only, in order.
  public var datagrams: [ArraySlice<UInt8>] {
    entries.compactMap { entry in entry.slot < 0 ? bytes(of: Datagram(entry)) : nil }
  }

  /// Called from every step of a session: one non-generic copy for both profiles.
  mutating func send(_ packet: consuming Packet) {
    OutputEntry.send(packet, entries: &entries, packets: &packets, count: &packetCount)
  }

  /// Sends a RENEW_TOKEN of `token` under `cookie` (after an accept that may have taken an
  /// older token, and with each heartbeat while the server has not confirmed a renewal,
  /// ``LinkCore/renewal``): the packet made in one non-generic copy for every caller of
  /// both profiles.
  mutating func sendRenewal(cookie: UInt64, token: Token) {
    OutputEntry.sendRenewal(
      cookie: cookie, token: token, entries: &entries, packets: &packets, count: &packetCount)
  }

  /// The datagram written at the end of ``bytes`` from `start` sent (protocol version 2's
  /// layer writes its own datagrams); nothing if none was written.
  mutating func sendWritten(from start: Int) {
    OutputEntry.sendWritten(from: start, entries: &entries, bytes: bytes)
  }
}

extension SessionOutput where Notification: SessionNotification {
  /// Every action, in order (tests and logs: the library reads them by index).
  public var actions: [SessionAction<Notification>] {
    entries.compactMap { entry in
      if entry.slot >= 0 {
        Notification.unwrapped(notes[Int(entry.slot)]).map { .notify($0) }
      } else {
        .send(Datagram(entry))
      }
    }
  }

  /// Action `index`, a notification (nil for a datagram's).
  public func notification(at index: Int) -> Notification? {
    let slot = entries[index].slot
    return slot >= 0 ? Notification.unwrapped(notes[Int(slot)]) : nil
  }

  /// The notifications only, in order (tests and logs).
  public var notifications: [Notification] { notes.compactMap { Notification.unwrapped($0) } }

  /// Called from every step of a session: the notification kept as both profiles' one
  /// element type, appended by one non-generic copy.
  @inline(never)  // called from every step of a session
  mutating func notify(_ notification: consuming Notification) {
    OutputEntry.note(notification.wrapped(), entries: &entries, notes: &notes)
  }
}

/// A notification of either profile, as a ``SessionOutput`` keeps it: one element type
/// for both profiles' outputs.
public enum OutputNotification: Sendable {
  case channel(ChannelNotification)
  case login(LoginNotification)
}

/// A profile's notification: what a ``SessionOutput`` keeps of it, and gives back.
public protocol SessionNotification {
  /// As the output keeps it.
  consuming func wrapped() -> OutputNotification
  /// What the output kept; nil for the other profile's (never in one session's output).
  static func unwrapped(_ kept: consuming OutputNotification) -> Self?
}

extension ChannelNotification: SessionNotification {
  public consuming func wrapped() -> OutputNotification { .channel(self) }
  public static func unwrapped(_ kept: consuming OutputNotification) -> Self? {
    if case .channel(let notification) = kept { notification } else { nil }
  }
}

extension LoginNotification: SessionNotification {
  public consuming func wrapped() -> OutputNotification { .login(self) }
  public static func unwrapped(_ kept: consuming OutputNotification) -> Self? {
    if case .login(let notification) = kept { notification } else { nil }
  }
}

/// One action of a ``SessionOutput``: a heap's entry (``SlotHeap/Entry``), for its element
/// type's code, which the library holds already.
typealias OutputEntry = SlotHeap.Entry

extension SlotHeap.Entry {
  /// A notification's entry: `slot` its index among the output's notifications.
  init(slot: Int32) { self.init(key: 0, payload: 0, slot: slot) }

  /// A datagram's entry, of the bytes at `range`.
  init(sending range: Range<Int>) {
    self.init(
      key: UInt64(truncatingIfNeeded: range.lowerBound),
      payload: UInt64(truncatingIfNeeded: range.upperBound), slot: -1)
  }

  /// A packet's entry: `index` among the output's packets.
  init(packet index: Int) {
    self.init(key: UInt64(truncatingIfNeeded: index), payload: 0, slot: -2)
  }

  /// The bytes a datagram's entry points at (empty for a packet's); nil for a
  /// notification's.
  var sendRange: Range<Int>? {
    if slot >= 0 { return nil }
    return slot == -1 ? Int(truncatingIfNeeded: key)..<Int(truncatingIfNeeded: payload) : 0..<0
  }

  /// Room for what one step of a steady session writes (a heartbeat, its ack's
  /// notifications; an INIT, 469 bytes): every engine holds its output for its whole life,
  /// so this is memory per session. What a rarer step needs more (a burst of member events,
  /// a rekey with a retry) the arrays grow to once and keep. It was 16 entries, 16 packets
  /// and 2,400 bytes: 4.7 KB of heap per engine, more than half of it (issue 26).
  @inline(never)  // one copy for both profiles
  static func reserve(
    entries: inout [OutputEntry], packets: inout [Packet], bytes: inout [UInt8]
  ) {
    entries.reserveCapacity(4)
    packets.reserveCapacity(2)
    bytes.reserveCapacity(512)
  }

  @inline(never)  // one copy for both profiles
  static func datagram(at index: Int, entries: [OutputEntry], bytes: [UInt8])
    -> ArraySlice<UInt8>?
  {
    let entry = entries[index]
    if entry.slot >= 0 { return nil }
    // A packet's entry (never seen by the driver: the layer replaces each first) reads as
    // no bytes.
    let (start, end) =
      entry.slot == -1
      ? (Int(truncatingIfNeeded: entry.key), Int(truncatingIfNeeded: entry.payload)) : (0, 0)
    return bytes[start..<end]
  }

  @inline(never)  // one copy for both profiles
  static func removeAll(
    entries: inout [OutputEntry], bytes: inout [UInt8], notes: inout [OutputNotification]
  ) {
    shorten(&entries, to: 0)
    truncate(&bytes, to: 0)
    while notes.popLast() != nil {}
  }

  @inline(never)  // one copy of the append for both profiles
  static func send(
    _ packet: consuming Packet, entries: inout [OutputEntry], packets: inout [Packet],
    count: inout Int
  ) {
    add(OutputEntry(packet: count), to: &entries)
    while packets.count > count { _ = packets.popLast() }
    Packet.add(packet, to: &packets)
    count += 1
  }

  @inline(never)  // one copy for every RENEW_TOKEN of both profiles
  static func sendRenewal(
    cookie: UInt64, token: Token, entries: inout [OutputEntry], packets: inout [Packet],
    count: inout Int
  ) {
    send(
      Packet(cookie: cookie, message: .renewToken(token)), entries: &entries,
      packets: &packets, count: &count)
  }

  @inline(never)  // one copy for both profiles
  static func note(
    _ notification: consuming OutputNotification, entries: inout [OutputEntry],
    notes: inout [OutputNotification]
  ) {
    add(OutputEntry(slot: Int32(truncatingIfNeeded: notes.count)), to: &entries)
    notes.append(notification)
  }

  @inline(never)  // one copy for every caller
  static func sendWritten(from start: Int, entries: inout [OutputEntry], bytes: [UInt8]) {
    if bytes.count > start { add(OutputEntry(sending: start..<bytes.count), to: &entries) }
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

/// A datagram inside a ``SessionOutput``: its bytes, or a packet the session sent that
/// protocol version 2's layer has not replaced yet (read as version 1's encoding of it).
public struct Datagram: Equatable, Sendable {
  public let range: Range<Int>
  /// The packet's index in its output; -1 for bytes.
  let packet: Int

  init(_ entry: OutputEntry) {
    range = entry.sendRange ?? 0..<0
    packet = entry.slot == -2 ? Int(truncatingIfNeeded: entry.key) : -1
  }
}
