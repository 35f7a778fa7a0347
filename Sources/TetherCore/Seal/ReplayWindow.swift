// SPDX-License-Identifier: Apache-2.0
/// Which counters of one direction's key may still be opened: a sliding window over the
/// 64-bit counters the peer seals with, so a datagram is opened at most once, in any order
/// within the window. A bitmap that shifts as the highest counter moves, as IPsec's
/// (RFC 4303 §3.4.3); WireGuard's ring of words (RFC 6479) saves the shift, which matters
/// only for windows of thousands of bits.
///
/// Two steps, because only a datagram that opened is the peer's: `check` answers before
/// the datagram is opened and changes nothing, `accept` records the counter after it
/// opened. A datagram that fails to open, repeats, or is older than the window leaves the
/// window as it was: a forged datagram with a huge counter and a bad tag cannot slide the
/// window past the genuine datagrams that follow it.
///
/// The window is 128 counters wide: twice the 64 that protocol v2 asks as a minimum and
/// that IPsec uses by default. WireGuard keeps thousands of bits, for tunnels that carry a
/// link's full rate over many cores, where thousands of packets are in flight and
/// reordered at once. A Tether session carries heartbeats, presence digests and notices, a
/// few datagrams a second: to be reordered by more than 127 of them, a datagram would be
/// held for tens of seconds, past every threshold the session has. Two words kept inline:
/// no heap, 24 bytes of state per direction, the same code on 32-bit boards.
public struct ReplayWindow: Equatable, Sendable {
  /// How many counters, ending at the highest accepted one, the window remembers.
  public static var width: UInt64 { 128 }

  /// What `check` says of a counter.
  public enum Verdict: Equatable, Sendable {
    /// Not seen and within reach: the datagram may be opened.
    case fresh
    /// Accepted before: a replay.
    case repeated
    /// Older than the window reaches: whether it was seen is no longer known, so it is
    /// refused as WireGuard and IPsec refuse it.
    case tooOld
  }

  /// The highest counter accepted (meaningless while `seen` is empty).
  public private(set) var highest: UInt64 = 0
  /// Bit i of `seen` (i < 64 in `low`, the others in `high`) is set when `highest - i` was
  /// accepted. Once any counter is accepted, bit 0 (`highest` itself) is set, so an empty
  /// window is the one with no bit set: counter 0 needs no special case.
  private var low: UInt64 = 0
  private var high: UInt64 = 0

  public init() {}

  /// Whether nothing was accepted yet.
  public var isEmpty: Bool { low == 0 && high == 0 }

  /// Whether a datagram sealed with `counter` may be opened. Changes nothing.
  public func check(_ counter: UInt64) -> Verdict {
    if isEmpty || counter > highest { return .fresh }
    let age = highest - counter
    if age >= Self.width { return .tooOld }
    return isSeen(age: age) ? .repeated : .fresh
  }

  /// Records `counter` as opened, if `check` calls it fresh; otherwise changes nothing.
  /// Call it only after the datagram opened. Returns whether it was recorded.
  @discardableResult
  public mutating func accept(_ counter: UInt64) -> Bool {
    guard check(counter) == .fresh else { return false }
    if isEmpty {
      highest = counter
      low = 1
    } else if counter > highest {
      slide(by: counter - highest)
      highest = counter
      low |= 1
    } else {
      markSeen(age: highest - counter)
    }
    return true
  }

  private func isSeen(age: UInt64) -> Bool {
    age < 64 ? low >> age & 1 == 1 : high >> (age - 64) & 1 == 1
  }

  private mutating func markSeen(age: UInt64) {
    if age < 64 { low |= 1 << age } else { high |= 1 << (age - 64) }
  }

  /// Moves every bit `distance` places older; what passes the window's end is forgotten.
  /// `distance` may be any positive value (a jump of 2^63 forgets everything).
  private mutating func slide(by distance: UInt64) {
    if distance >= Self.width {
      low = 0
      high = 0
    } else if distance >= 64 {
      high = low << (distance - 64)
      low = 0
    } else {
      high = high << distance | low >> (64 - distance)
      low = low << distance
    }
  }
}
