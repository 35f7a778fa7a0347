// SPDX-License-Identifier: Apache-2.0
/// What a session asks its driver to do, in order: datagrams to send and notifications to
/// deliver. The session appends; the driver performs the actions and calls
/// ``removeAll()``, which keeps the storage, so a steady session reuses the same memory
/// for every heartbeat. Both profiles use it, each with its own notifications.
public struct SessionOutput<Notification> {
  // Settable inside the module: protocol version 2's layer (``SecureLink``) replaces the
  // datagrams a session wrote here, so the driver sends what it finds here either way.
  public internal(set) var actions: [SessionAction<Notification>] = []
  /// The encoded datagrams, back to back; ``SessionAction/send(_:)`` points into it.
  public internal(set) var bytes: [UInt8] = []

  public init() {
    actions.reserveCapacity(16)
    bytes.reserveCapacity(2 * Packet.maximumSize)
  }

  public mutating func removeAll() {
    // One at a time, keeping the storage: `removeAll(keepingCapacity:)` is a
    // replaceSubrange specialization per element type, this a small popLast (a step sends
    // a few dozen bytes, a JOIN at most a few hundred).
    while actions.popLast() != nil {}
    while bytes.popLast() != nil {}
  }

  /// The bytes of one datagram of this output.
  public func bytes(of datagram: Datagram) -> ArraySlice<UInt8> { bytes[datagram.range] }

  /// The notifications only, in order (tests and logs).
  public var notifications: [Notification] {
    actions.compactMap { if case .notify(let n) = $0 { n } else { nil } }
  }

  /// The datagrams only, in order.
  public var datagrams: [ArraySlice<UInt8>] {
    actions.compactMap { if case .send(let d) = $0 { bytes(of: d) } else { nil } }
  }

  @inline(never)  // called from every step of a session: one copy of the encode and append
  mutating func send(_ packet: Packet) {
    let start = bytes.count
    packet.encodeAsClient(into: &bytes)
    append(.send(Datagram(range: start..<bytes.count)))
  }

  @inline(never)  // called from every step of a session: one copy of the append
  mutating func notify(_ notification: Notification) {
    append(.notify(notification))
  }

  /// The datagram written at the end of ``bytes`` from `start` sent (protocol version 2's
  /// layer writes its own datagrams); nothing if none was written. One copy of the append
  /// for each of its callers.
  @inline(never)
  mutating func sendWritten(from start: Int) {
    if bytes.count > start { append(.send(Datagram(range: start..<bytes.count))) }
  }

  private mutating func append(_ action: SessionAction<Notification>) {
    actions.append(action)
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
