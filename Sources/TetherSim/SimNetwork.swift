// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// How one direction of one client's link treats datagrams: its delay, and the faults it
/// injects. The default is a perfect link with no delay (datagrams arrive at the instant
/// they are sent, in order).
public struct LinkConditions: Equatable, Sendable {
  /// The one-way delay of every datagram.
  public var latency: Interval = .zero
  /// Up to this much more, drawn uniformly per datagram (datagrams overtake each other).
  public var jitter: Interval = .zero
  /// Chance, per datagram, of a spike: `spike` more delay on top.
  public var spikeChance: Double = 0
  public var spike: Interval = .zero
  /// Chance, per datagram, that it is lost.
  public var loss: Double = 0
  /// Chance, per datagram, that it arrives twice (each copy with its own delay).
  public var duplicate: Double = 0

  public init() {}

  public init(latency: Interval, jitter: Interval = .zero) {
    self.latency = latency
    self.jitter = jitter
  }
}

/// What the network did to datagrams, by kind: the simulator's fault counters.
public struct NetworkCounters: Equatable, Sendable {
  public enum Kind: Int, CaseIterable, Sendable, Labelled {
    /// Handed to the network (copies from duplication not included), and delivered.
    case sent, delivered
    /// Lost to a random loss, or because their direction was cut (when sent, or in flight).
    case lost, droppedByCut
    /// Sent twice; given a delay spike; arrived before a datagram sent earlier on the same
    /// link and direction.
    case duplicated, delaySpiked, reordered
    /// Set aside (``World/setsAsideLate``): MEMBER_EVENTS and CHANNEL_ACK of an earlier
    /// login server session after the client took a newer one's LOGIN_ACCEPT; LOGIN_HEARTBEAT
    /// and CHANNEL_OPERATION sent in an earlier one that reach a newer one; LOGIN_ACCEPTs
    /// (not RESUMED) of the server session a CONNECTED client already holds.
    case lateDownlink, lateUplink, lateAccepts
  }

  private var counts = [UInt64](repeating: 0, count: Kind.allCases.count)

  public subscript(_ kind: Kind) -> UInt64 {
    get { counts[kind.rawValue] }
    set { counts[kind.rawValue] = newValue }
  }

  public static func += (lhs: inout NetworkCounters, rhs: NetworkCounters) {
    for i in lhs.counts.indices { lhs.counts[i] += rhs.counts[i] }
  }
}

/// A datagram in flight.
struct Flight {
  var at: Instant
  /// Breaks ties between datagrams due at the same instant: the order they were sent.
  var order: UInt64
  var toServer: Bool
  var client: Int
  var bytes: [UInt8]
  var packet: Packet?
  /// The server session of its client it belongs to (``ServerSide/generation``; from the
  /// client: of the last accept it took).
  var generation: UInt64 = 0
  /// Sent by the ``Attacker``: delivered whatever the link's state, and checked.
  var forged = false
  /// An attacker's datagram to the edge from another address than its client's.
  var source: PeerAddress?
}

/// Datagrams in flight, earliest first (a binary heap on (at, order)).
struct FlightQueue {
  private var heap: [Flight] = []

  var next: Instant? { heap.first?.at }

  private static func before(_ a: Flight, _ b: Flight) -> Bool {
    a.at < b.at || (a.at == b.at && a.order < b.order)
  }

  mutating func push(_ flight: Flight) {
    heap.append(flight)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard Self.before(heap[child], heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  mutating func pop() -> Flight? {
    guard !heap.isEmpty else { return nil }
    heap.swapAt(0, heap.count - 1)
    let top = heap.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var best = parent
      if left < heap.count, Self.before(heap[left], heap[best]) { best = left }
      if right < heap.count, Self.before(heap[right], heap[best]) { best = right }
      guard best != parent else { break }
      heap.swapAt(parent, best)
      parent = best
    }
    return top
  }
}

extension SeededRandom {
  /// True with probability `chance` (0 never draws).
  mutating func chance(_ chance: Double) -> Bool {
    guard chance > 0 else { return false }
    return Double(next() >> 11) / Double(UInt64(1) << 53) < chance
  }

  /// Uniform in 0...interval.
  mutating func upTo(_ interval: Interval) -> Interval {
    guard interval > .zero else { return .zero }
    return Interval(nanoseconds: next() % (interval.nanoseconds + 1))
  }
}
