// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The member events of one login session that its client has not yet taken, oldest first.
/// Events are numbered from 1 in each server session; the client's LOGIN_HEARTBEAT says how
/// many it has taken (``acknowledge(_:)``), and only those leave the queue.
///
/// Bounded by ``capacity``: ``append(_:)`` refuses an event past it, and the server then ends
/// the session (docs/PROTOCOL.md §6.7, "The queue's bound"), since a client that misses an
/// event cannot be told which one.
struct MemberEventQueue {
  /// The server session the events are numbered in (``LoginAccept/session``).
  var session: UInt32 = 0
  /// At most this many events wait for one session.
  static let capacity = 256

  /// The number the next event gets.
  private(set) var nextSequence: UInt32 = 1
  /// Numbered `firstSequence ..< nextSequence`.
  private(set) var pending: [MemberEvent.Entry] = []

  /// The number of the oldest pending event (``nextSequence`` when none is pending).
  var firstSequence: UInt32 { nextSequence &- UInt32(pending.count) }

  /// Appends `entry` and returns its number; nil (nothing appended) when the queue is full.
  mutating func append(_ entry: MemberEvent.Entry) -> UInt32? {
    guard pending.count < Self.capacity else { return nil }
    pending.append(entry)
    defer { nextSequence &+= 1 }
    return nextSequence
  }

  /// The client has taken the first `received` events of the session: those leave the
  /// queue. A count below what it already acknowledged, or above what was numbered, changes
  /// nothing (a late heartbeat, or a client that counts wrong).
  mutating func acknowledge(_ received: UInt32) {
    let newlyTaken = received &- (firstSequence &- 1)
    guard newlyTaken > 0, newlyTaken <= UInt32(pending.count) else { return }
    pending.removeFirst(Int(newlyTaken))
  }

  /// The pending events from number `sequence` on, as many as fit one MEMBER_EVENTS
  /// datagram; nil when none is pending from there.
  func batch(from sequence: UInt32) -> MemberEvents? {
    let offset = sequence &- firstSequence
    guard offset < UInt32(pending.count) else { return nil }
    var entries: [MemberEvent.Entry] = []
    var size = 0
    for entry in pending[Int(offset)...] {
      let entrySize = MemberEvents.entrySize(channel: entry.channel, userID: entry.userID)
      guard entries.count < 255, size + entrySize <= MemberEvents.capacity else { break }
      entries.append(entry)
      size += entrySize
    }
    // Cannot throw: at least one entry (each is at most 130 bytes), within both limits.
    return try? MemberEvents(session: session, firstSequence: sequence, entries: entries)
  }
}
