// SPDX-License-Identifier: Apache-2.0
/// The channels a login session is in, as the app asked, and the operations the server
/// has not acknowledged yet (docs/PROTOCOL.md, CHANNEL_OPERATION).
struct LoginChannels {
  /// At most this many channels per session; a join beyond is refused on the spot.
  static let maximum = 16
  /// At most this many operations waiting for the server's acknowledgement.
  static let maximumPending = 32
  /// Operations sent again with each heartbeat, the oldest first.
  static let resentPerHeartbeat = 4

  /// The app's channels, in the order it joined them: each as the packet of the JOIN
  /// operation that asked for it (its cookie, session and sequence unused).
  private var joinedPackets: [Packet] = []
  /// Sent, not yet acknowledged, in sequence order: each as the packet that carries it,
  /// sent with the session's cookie. Both lists hold packets, the element type the
  /// session's output keeps, so the Embedded library holds no array code of their own (an
  /// array of `ChannelOperation` was about 0.9 KB of aarch64 text).
  private(set) var pendingPackets: [Packet] = []
  private var nextSequence: UInt32 = 1
  /// Member events taken from the current server session, in order.
  var eventsReceived: UInt32 = 0
  /// The server session (``LoginAccept/session``) that numbering belongs to; nil before
  /// the first LOGIN_ACCEPT of a login.
  private(set) var serverSession: UInt32?

  /// The app's channels, in the order it joined them (tests and logs).
  var joined: [ChannelName] { joinedPackets.map { Self.operation(in: $0).channel } }

  /// The operations sent, not yet acknowledged, in sequence order (tests and logs).
  var pending: [ChannelOperation] { pendingPackets.map { Self.operation(in: $0) } }

  func contains(_ channel: ChannelName) -> Bool { index(of: channel) != nil }

  var isFull: Bool { joinedPackets.count >= Self.maximum }
  var isBacklogged: Bool { pendingPackets.count >= Self.maximumPending }

  /// Records the app's join or leave and returns the operation to send.
  mutating func apply(_ kind: ChannelOperation.Kind, _ channel: ChannelName) -> Packet {
    switch kind {
    case .join:
      Packet.add(
        Self.packet(ChannelOperation(sequence: 0, kind: .join, channel: channel)),
        to: &joinedPackets)
    case .leave:
      // A channel is in `joined` once at most.
      if let index = index(of: channel) { Self.remove(index..<(index + 1), from: &joinedPackets) }
    }
    return enqueue(kind, channel)
  }

  /// A new server session knows none of them: number from 1 again and join every channel.
  mutating func restart(serverSession: UInt32) {
    self.serverSession = serverSession
    Self.remove(0..<pendingPackets.count, from: &pendingPackets)
    nextSequence = 1
    eventsReceived = 0
    for index in joinedPackets.indices {
      _ = enqueue(.join, Self.operation(in: joinedPackets[index]).channel)
    }
  }

  /// The server applied every operation up to `sequence`: the first ones, as `pending` is
  /// in sequence order. (Dropping that prefix takes far less code than `removeAll(where:)`,
  /// which reorders the whole array in place.)
  mutating func acknowledge(upTo sequence: UInt32) {
    var applied = 0
    while applied < pendingPackets.count,
      Self.operation(in: pendingPackets[applied]).sequence <= sequence
    {
      applied += 1
    }
    Self.remove(0..<applied, from: &pendingPackets)
  }

  mutating func removeAll() {
    serverSession = nil
    Self.remove(0..<joinedPackets.count, from: &joinedPackets)
    Self.remove(0..<pendingPackets.count, from: &pendingPackets)
    nextSequence = 1
    eventsReceived = 0
  }

  private func index(of channel: ChannelName) -> Int? {
    joinedPackets.firstIndex { Self.operation(in: $0).channel == channel }
  }

  /// A CHANNEL_OPERATION's packet (its cookie filled in when it is sent).
  private static func packet(_ operation: ChannelOperation) -> Packet {
    Packet(cookie: 0, message: .channelOperation(operation))
  }

  /// The operation `packet` carries (every packet of these lists carries one).
  @inline(never)
  static func operation(in packet: Packet) -> ChannelOperation {
    if case .channelOperation(let operation) = packet.message { return operation }
    return ChannelOperation(sequence: 0, kind: .join, channel: ChannelName(checked: [0x30]))
  }

  /// Removes `range` from `packets`, keeping the storage, one packet at a time: through the
  /// `remove(at:)` the session's output has already (its `popLast`), not a
  /// `replaceSubrange` of its own. The lists hold at most 32.
  @inline(never)
  private static func remove(_ range: Range<Int>, from packets: inout [Packet]) {
    for _ in range { packets.remove(at: range.lowerBound) }
  }

  @inline(never)  // apply and restart share one copy
  private mutating func enqueue(_ kind: ChannelOperation.Kind, _ channel: ChannelName) -> Packet {
    // Numbered in the server session known (a restart numbers them all again for the next).
    let packet = Self.packet(
      ChannelOperation(
        session: serverSession ?? 0, sequence: nextSequence, kind: kind, channel: channel))
    nextSequence &+= 1
    Packet.add(packet, to: &pendingPackets)
    return packet
  }
}
