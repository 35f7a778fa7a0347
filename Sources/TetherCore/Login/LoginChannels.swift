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

  /// The app's channels, in the order it joined them: each as the JOIN operation that
  /// asked for it (its session and sequence unused). Held as operations, the element type
  /// of `pending`, so the Embedded library holds one array's code for both (a `[ChannelName]`
  /// was about 0.7 KB of aarch64 text of its own).
  private var joinedOperations: [ChannelOperation] = []
  /// Sent, not yet acknowledged, in sequence order.
  private(set) var pending: [ChannelOperation] = []
  private var nextSequence: UInt32 = 1
  /// Member events taken from the current server session, in order.
  var eventsReceived: UInt32 = 0
  /// The server session (``LoginAccept/session``) that numbering belongs to; nil before
  /// the first LOGIN_ACCEPT of a login.
  private(set) var serverSession: UInt32?

  /// The app's channels, in the order it joined them.
  var joined: [ChannelName] { joinedOperations.map { $0.channel } }

  func contains(_ channel: ChannelName) -> Bool { index(of: channel) != nil }

  var isFull: Bool { joinedOperations.count >= Self.maximum }
  var isBacklogged: Bool { pending.count >= Self.maximumPending }

  /// Records the app's join or leave and returns the operation to send.
  mutating func apply(_ kind: ChannelOperation.Kind, _ channel: ChannelName) -> ChannelOperation {
    switch kind {
    case .join:
      joinedOperations.append(ChannelOperation(sequence: 0, kind: .join, channel: channel))
    case .leave:
      // A channel is in `joined` once at most. Removed as a subrange: the code that
      // acknowledge(upTo:) uses already, rather than a `remove(at:)` of its own.
      if let index = index(of: channel) { joinedOperations.removeSubrange(index..<(index + 1)) }
    }
    return enqueue(kind, channel)
  }

  /// A new server session knows none of them: number from 1 again and join every channel.
  mutating func restart(serverSession: UInt32) {
    self.serverSession = serverSession
    // Keeps the storage, like removeAll(keepingCapacity: true), through the code
    // acknowledge(upTo:) uses already instead of a copy of its own.
    pending.removeSubrange(0..<pending.count)
    nextSequence = 1
    eventsReceived = 0
    for operation in joinedOperations { _ = enqueue(.join, operation.channel) }
  }

  /// The server applied every operation up to `sequence`: the first ones, as `pending` is
  /// in sequence order. (Dropping that prefix takes far less code than `removeAll(where:)`,
  /// which reorders the whole array in place.)
  mutating func acknowledge(upTo sequence: UInt32) {
    var applied = 0
    while applied < pending.count, pending[applied].sequence <= sequence { applied += 1 }
    pending.removeSubrange(0..<applied)
  }

  mutating func removeAll() {
    serverSession = nil
    joinedOperations.removeSubrange(0..<joinedOperations.count)
    pending.removeSubrange(0..<pending.count)
    nextSequence = 1
    eventsReceived = 0
  }

  private func index(of channel: ChannelName) -> Int? {
    joinedOperations.firstIndex { $0.channel == channel }
  }

  @inline(never)  // apply and restart share one copy
  private mutating func enqueue(_ kind: ChannelOperation.Kind, _ channel: ChannelName)
    -> ChannelOperation
  {
    // Numbered in the server session known (a restart numbers them all again for the next).
    let operation = ChannelOperation(
      session: serverSession ?? 0, sequence: nextSequence, kind: kind, channel: channel)
    nextSequence &+= 1
    pending.append(operation)
    return operation
  }
}
