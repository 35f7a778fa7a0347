// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The session ids of the tickets the edge has accepted, each remembered until its ticket
/// expires (docs/PROTOCOL.md §12.6, CONFIRM step 4): the one memory the stateless path
/// keeps, so that a CONFIRM replayed from the device's own address after a leave makes no
/// session, no JOINED and no takeover.
///
/// Bounded by ``capacity`` (the edge gives it `maxSessions`). **When full it refuses new
/// ids; it never forgets one early**: forgetting an id before its ticket expires would make
/// that ticket's CONFIRM good again. A refused CONFIRM is dropped, the device repeats it,
/// and it is taken once entries expire.
public struct ConsumedTickets {
  /// How many ids it holds at most.
  public let capacity: Int
  /// Each id's ticket expiry (monotonic ms).
  private var expiries: [SessionID: UInt64] = [:]
  /// The same entries, soonest expiry first: a binary min-heap, so expiring costs
  /// O(log n) per entry however out of order tickets are confirmed.
  private var heap: [(expiresAtMs: UInt64, id: SessionID)] = []

  public init(capacity: Int) { self.capacity = max(capacity, 1) }

  /// How many ids it holds now (expired ones included until the next call that expires).
  public var count: Int { expiries.count }

  /// What ``consume(_:expiresAtMs:now:)`` did.
  public enum Outcome: Equatable, Sendable {
    /// Remembered: the ticket's CONFIRM makes its session.
    case consumed
    /// Already remembered: a repeated or replayed CONFIRM, which makes nothing new.
    case alreadyConsumed
    /// Full of unexpired ids: the CONFIRM is dropped, and nothing is forgotten.
    case full
  }

  /// Whether `id`'s ticket was consumed and has not expired at `now`.
  public func contains(_ id: SessionID, now: Instant) -> Bool {
    guard let expiry = expiries[id] else { return false }
    return Self.ms(now) < expiry
  }

  /// Remembers `id` until its ticket expires at `expiresAtMs` (monotonic ms), if it is new
  /// and there is room once the expired ids are forgotten.
  public mutating func consume(_ id: SessionID, expiresAtMs: UInt64, now: Instant) -> Outcome {
    forgetExpired(now: now)
    guard expiries[id] == nil else { return .alreadyConsumed }
    guard expiries.count < capacity else { return .full }
    expiries[id] = expiresAtMs
    push((expiresAtMs, id))
    return .consumed
  }

  /// Forgets every id whose ticket has expired at `now`.
  public mutating func forgetExpired(now: Instant) {
    let nowMs = Self.ms(now)
    while let first = heap.first, first.expiresAtMs <= nowMs {
      popFirst()
      expiries[first.id] = nil
    }
  }

  private static func ms(_ instant: Instant) -> UInt64 { instant.nanoseconds / 1_000_000 }

  // MARK: - The heap

  private mutating func push(_ entry: (expiresAtMs: UInt64, id: SessionID)) {
    heap.append(entry)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].expiresAtMs < heap[parent].expiresAtMs else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private mutating func popFirst() {
    guard let last = heap.popLast(), !heap.isEmpty else { return }
    heap[0] = last
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var least = parent
      if left < heap.count, heap[left].expiresAtMs < heap[least].expiresAtMs { least = left }
      if right < heap.count, heap[right].expiresAtMs < heap[least].expiresAtMs { least = right }
      guard least != parent else { return }
      heap.swapAt(parent, least)
      parent = least
    }
  }
}
