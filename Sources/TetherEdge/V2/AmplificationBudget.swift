// SPDX-License-Identifier: Apache-2.0
/// The rule that keeps the edge from reflecting traffic at a victim (docs/PROTOCOL.md
/// §12.13): to an address it has not validated, the edge never sends more bytes than it
/// received from it. One value per unvalidated address: the stateless path makes one per
/// INIT (its one answer must fit in it), a migration candidate keeps one until its path is
/// validated (§12.11).
public struct AmplificationBudget: Equatable, Sendable {
  /// Bytes received from the address (datagrams counted as the rule says: every INIT; on a
  /// candidate path, the datagrams that opened).
  public private(set) var received: UInt64 = 0
  /// Bytes sent to it.
  public private(set) var sent: UInt64 = 0

  public init() {}

  /// A budget that has received `bytes` (one datagram's).
  public init(received bytes: Int) { receive(bytes) }

  /// What may still be sent.
  public var remaining: UInt64 { received - sent }

  /// Counts a datagram of `bytes` received from the address.
  public mutating func receive(_ bytes: Int) {
    let (sum, overflow) = received.addingReportingOverflow(UInt64(max(bytes, 0)))
    received = overflow ? .max : sum  // saturates: never below `sent`
  }

  /// Counts a datagram of `bytes` about to be sent, if it fits: true then; false (and
  /// nothing counted: the datagram must not be sent) when it would put more out than in.
  public mutating func spend(_ bytes: Int) -> Bool {
    let size = UInt64(max(bytes, 0))
    guard size <= remaining else { return false }
    sent += size
    return true
  }
}
