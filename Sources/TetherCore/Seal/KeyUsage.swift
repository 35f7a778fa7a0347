// SPDX-License-Identifier: Apache-2.0
/// The use one handshake's keys have had: how many messages the sending key sealed (which
/// is also the next counter, the AEAD's nonce) and how many datagrams failed to open under
/// the receiving key, against `KeyLimits`. It hands out each counter once, in order, and
/// refuses the one that would pass the hard limit, so a nonce can neither repeat nor wrap.
public struct KeyUsage: Equatable, Sendable {
  /// Whether the keys may still be used.
  public enum Status: Equatable, Sendable {
    /// Below every soft limit.
    case fresh
    /// A soft limit is reached: start a new handshake, keep using these keys until it ends.
    case rekeyDue
    /// A hard limit is reached: seal and open nothing more under these keys.
    case exhausted
  }

  public let limits: KeyLimits
  // Both counts are settable inside the module only so that tests can start near the top
  // of the 64-bit range, which no test could reach one message at a time.
  /// Messages sealed under the sending key: the counters 0 ..< sealed are used.
  public internal(set) var sealed: UInt64 = 0
  /// Datagrams that failed to open under the receiving key (they stop counting at 2^64-1).
  public internal(set) var failedOpens: UInt64 = 0

  public init(limits: KeyLimits = .standard) {
    self.limits = limits
  }

  public var status: Status {
    if sealed >= limits.rejectAfterMessages || failedOpens >= limits.rejectAfterFailedOpens {
      return .exhausted
    }
    if sealed >= limits.rekeyAfterMessages || failedOpens >= limits.rekeyAfterFailedOpens {
      return .rekeyDue
    }
    return .fresh
  }

  /// The counter to seal the next message with, counted as sealed; nil once the keys are
  /// exhausted (the counter would pass `rejectAfterMessages`, or too many opens failed).
  public mutating func nextSendCounter() -> UInt64? {
    guard status != .exhausted else { return nil }
    // sealed < rejectAfterMessages <= UInt64.max here, so the sum cannot wrap.
    defer { sealed += 1 }
    return sealed
  }

  /// Counts a datagram that did not open under the receiving key.
  public mutating func recordFailedOpen() {
    if failedOpens < UInt64.max { failedOpens += 1 }
  }

  /// Whether a received counter is worth opening: the keys are not exhausted, and the
  /// counter is one a peer under the same limits could have sealed. Checked before any
  /// cryptography, as WireGuard's receive path does.
  public func mayOpen(counter: UInt64) -> Bool {
    status != .exhausted && counter < limits.rejectAfterMessages
  }
}
