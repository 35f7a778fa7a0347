// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// An attacker on every client's path, as a seeded actor of the world (issue 25's proofs):
/// it sees each datagram the edge delivers to a client and, with ``chance``, sends that
/// client one of its own. What it sends must change nothing of the session: the layer
/// hands the session nothing, the session writes nothing (no callback, no datagram) and its
/// state stays (the world's "attacker" invariant). The layer itself may answer (a RESPONSE
/// replayed while its attempt is open is answered with the CONFIRM again); that is the
/// layer's, not the session's, and goes out as any datagram does.
///
/// What it sends (``Attack``): a copy of the datagram at once, a copy of an earlier one
/// later (up to 2 s: after leaves, rejoins, renewals and restarts the scenario made), the
/// datagram with one bit flipped, a RESET for the session id it saw with a guessed value, a
/// REFUSE_CLEAR with a guessed nonce, and a version 1 SESSION_UNKNOWN. With ``attacksEdge``
/// it also sends the edge the clients' own datagrams again, from their address or another.
public struct Attacker {
  public enum Attack: Int, CaseIterable, Sendable, Labelled {
    case replayNow, replayLater, bitFlip, forgedReset, forgedRefusal, versionOne
    /// To the edge: a client's datagram again from its address, at once or later, or from
    /// another address.
    case replayToEdge, replayToEdgeLater, movedToEdge
  }
  static let toClients: [Attack] = [
    .replayNow, .replayLater, .bitFlip, .forgedReset, .forgedRefusal, .versionOne,
  ]

  /// Per datagram delivered to a client: the chance that it attacks.
  public var chance: Double
  /// Whether it also sends the edge, per datagram a client delivered there with the same
  /// chance: that datagram again from the client's address, at once or one of the last 16
  /// up to 2 s later, or from another address. Off in `make sim-check`
  /// (`tether-sim --attack-edge`): it finds that a CONFIRM replayed from the device's own
  /// address within its ticket's lifetime, while the edge still holds the session it made,
  /// is answered with the ACCEPT again (§12.6, CONFIRM rule 4), which the device's layer
  /// hands a RECONNECTING session as an accept: the device reports CONNECTED/REJOIN_SUCCESS
  /// with its uplink dead (seed 118).
  public var attacksEdge = false
  var random: SeededRandom
  /// Per client: the last datagrams the edge delivered (what it can replay), and the last
  /// the client sent the edge.
  var heard: [[[UInt8]]] = []
  var said: [[[UInt8]]] = []
  /// How many of each it sent.
  public internal(set) var counts = [UInt64](repeating: 0, count: Attack.allCases.count)

  public init(seed: UInt64, chance: Double = 0.05) {
    random = SeededRandom(seed: seed)
    self.chance = chance
  }

  public subscript(_ attack: Attack) -> UInt64 { counts[attack.rawValue] }

  /// The edge delivered `bytes` to client `i`: what the attacker sends that client, and
  /// after how long (nil: nothing).
  mutating func saw(_ bytes: [UInt8], to i: Int) -> (bytes: [UInt8], after: Interval)? {
    while heard.count <= i { heard.append([]) }
    heard[i].append(bytes)
    if heard[i].count > 16 { heard[i].removeFirst() }
    guard random.chance(chance), !bytes.isEmpty else { return nil }
    let attack = Self.toClients[Int(random.next() % UInt64(Self.toClients.count))]
    counts[attack.rawValue] += 1
    switch attack {
    case .replayNow:
      return (bytes, .zero)
    case .replayLater:
      let earlier = heard[i][Int(random.next() % UInt64(heard[i].count))]
      return (earlier, random.upTo(.milliseconds(2000)))
    case .bitFlip:
      var flipped = bytes
      let bit = Int(random.next() % UInt64(bytes.count * 8))
      flipped[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
      return (flipped, .zero)
    case .forgedReset:
      // Kind, the session id the datagram named (if it named one), a guessed reset value.
      let id = bytes.count >= 9 ? Array(bytes[1..<9]) : guess(8)
      return ([WireView.resetKind] + id + guess(16), .zero)
    case .forgedRefusal:
      // REFUSE_CLEAR (§12.6): kind, a guessed N_d, reason 1.
      return ([0x05] + guess(16) + [0x01], .zero)
    case .versionOne:
      return (Packet(cookie: random.next(), message: .sessionUnknown).encoded, .zero)
    default:
      return nil
    }
  }

  /// Client `i` sent the edge `bytes` (delivered): what the attacker sends the edge, when,
  /// and whether from another address (nil: nothing).
  mutating func saw(sent bytes: [UInt8], by i: Int) -> (
    bytes: [UInt8], after: Interval, moved: Bool
  )? {
    guard attacksEdge else { return nil }
    while said.count <= i { said.append([]) }
    said[i].append(bytes)
    if said[i].count > 16 { said[i].removeFirst() }
    guard random.chance(chance) else { return nil }
    let attacks: [Attack] = [.replayToEdge, .replayToEdgeLater, .movedToEdge]
    let attack = attacks[Int(random.next() % 3)]
    counts[attack.rawValue] += 1
    switch attack {
    case .replayToEdgeLater:
      let earlier = said[i][Int(random.next() % UInt64(said[i].count))]
      return (earlier, random.upTo(.milliseconds(2000)), false)
    case .movedToEdge: return (bytes, .zero, true)
    default: return (bytes, .zero, false)
    }
  }

  private mutating func guess(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
  }
}
