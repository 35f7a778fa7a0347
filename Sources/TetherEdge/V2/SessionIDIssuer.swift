// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Issues version 2 session ids (docs/PROTOCOL.md §12.8) and judges, without a memory of
/// every id, whether one may get a RESET (§12.9).
///
/// Ids are the epoch (a random nonzero `u32` drawn at each start) then a serial counting
/// from 1, so no id repeats within an epoch: the ticket's nonce is the id (§12.6), and this
/// is what keeps it from repeating under one `K_ticket`. When the serial would reach
/// 2^32 − 1 the issuer draws a new epoch (never the one it leaves); the ``TicketSealer``
/// draws a new `K_ticket` on the first id of it.
///
/// A RESET tells a device its session is gone, so it must never answer an id that could yet
/// become a session: one not issued yet, or issued within the last ticket lifetime (its
/// ticket may still be confirmed). Serials only grow, so the issuer needs only the serial it
/// had reached at each second of the last ticket lifetime to tell them apart.
public struct SessionIDIssuer<Crypto: SessionCrypto> {
  /// The serial it had reached when a second began.
  private struct Mark {
    /// Whole seconds of the monotonic clock.
    var second: UInt64
    /// Every serial up to this one (of the current epoch) was issued before `second`.
    var serial: UInt32
  }

  private let crypto: Crypto
  /// How long a ticket may be confirmed after it is issued.
  public let ticketLifetime: Interval
  /// This start's epoch (until the serials run out); 0 while none could be drawn (the seam
  /// gave fewer random bytes than asked): then no id is issued.
  public private(set) var epoch: UInt32
  /// The highest serial issued in ``epoch``; 0 before the first.
  public private(set) var lastSerial: UInt32
  /// When ``lastSerial`` was issued.
  private var lastIssuedAt: Instant?
  /// Ascending by second; the first is the latest one at or before `now − ticketLifetime`.
  private var marks: [Mark] = []

  /// The last serial an epoch issues.
  static var finalSerial: UInt32 { UInt32.max - 1 }

  /// Draws of an epoch before giving up: a working source repeats a zero or the old epoch
  /// once in 2^32 draws, so more than one retry means a broken one, and looping on it would
  /// hang the edge.
  static var epochDraws: Int { 4 }

  /// Draws the epoch (4 random bytes through `crypto`, drawn again while zero or short, at
  /// most ``epochDraws`` times; 0 if none came: ``issue(now:)`` draws again).
  public init(crypto: Crypto, ticketLifetime: Interval) {
    self.init(crypto: crypto, ticketLifetime: ticketLifetime, lastSerial: 0)
  }

  /// As the public init, with the serials of the first epoch starting after `lastSerial`:
  /// tests reach the end of an epoch without issuing four billion ids.
  init(crypto: Crypto, ticketLifetime: Interval, lastSerial: UInt32) {
    self.crypto = crypto
    self.ticketLifetime = ticketLifetime
    epoch = Self.drawEpoch(crypto, other: 0) ?? 0
    self.lastSerial = lastSerial
  }

  /// The next id, issued at `now` (the edge's monotonic clock); nil, with nothing changed,
  /// when a new epoch is due (the first, or after the last serial) and the seam gives no
  /// random bytes for it: the caller answers nothing, as for any datagram it cannot serve.
  public mutating func issue(now: Instant) -> SessionID? {
    if epoch == 0 || lastSerial >= Self.finalSerial {
      guard let drawn = Self.drawEpoch(crypto, other: epoch) else { return nil }
      epoch = drawn
      lastSerial = 0
      lastIssuedAt = nil
      marks.removeAll()
    }
    // The first id of a new second: every serial so far was issued before the second after
    // the last one's, and that second has begun.
    if let lastIssuedAt, Self.second(lastIssuedAt) < Self.second(now) {
      marks.append(Mark(second: Self.second(lastIssuedAt) + 1, serial: lastSerial))
    }
    lastSerial += 1
    lastIssuedAt = now
    prune(now: now)
    return SessionID(epoch: epoch, serial: lastSerial)
  }

  /// Whether a DATA datagram with `id`, which names no session the edge holds, may be
  /// answered with a RESET at `now` (§12.9): yes for another epoch (the edge restarted, or
  /// its serials ran out), and for a serial of this epoch issued more than one ticket
  /// lifetime ago; no for a serial not issued yet or issued within the last lifetime.
  public func mayReset(_ id: SessionID, now: Instant) -> Bool {
    // Epoch 0 is no edge's (an epoch is drawn again while zero): no session to end.
    guard id.epoch != 0 else { return false }
    guard id.epoch == epoch else { return true }
    guard id.serial >= 1, id.serial <= lastSerial,
      now.nanoseconds > ticketLifetime.nanoseconds
    else { return false }
    let cutoff = now - ticketLifetime
    if let lastIssuedAt, lastIssuedAt < cutoff { return true }
    // The latest mark whose second began at or before the cutoff: every serial up to its
    // own was issued before then.
    let reached = marks.last(where: {
      Interval.seconds($0.second).nanoseconds <= cutoff.nanoseconds
    })
    return reached.map { id.serial <= $0.serial } ?? false
  }

  /// Drops the marks no later question needs: all before the latest one at or before
  /// `now − ticketLifetime` (the cutoff only grows). At most one per second of a lifetime,
  /// and two, is kept.
  private mutating func prune(now: Instant) {
    let cutoff = now - ticketLifetime
    var drop = 0
    while drop + 1 < marks.count,
      Interval.seconds(marks[drop + 1].second).nanoseconds <= cutoff.nanoseconds
    {
      drop += 1
    }
    if drop > 0 { marks.removeFirst(drop) }
  }

  private static func second(_ instant: Instant) -> UInt64 { instant.nanoseconds / 1_000_000_000 }

  /// A random nonzero epoch other than `other`; nil after ``epochDraws`` draws gave none
  /// (each short, zero or `other`).
  private static func drawEpoch(_ crypto: Crypto, other: UInt32) -> UInt32? {
    for _ in 0..<epochDraws {
      let bytes = crypto.randomBytes(count: 4)
      guard bytes.count == 4 else { continue }
      var epoch: UInt32 = 0
      for byte in bytes { epoch = epoch << 8 | UInt32(byte) }
      if epoch != 0 && epoch != other { return epoch }
    }
    return nil
  }
}
