// SPDX-License-Identifier: Apache-2.0
/// How long one handshake's keys may be used: messages sealed under the sending key, and
/// datagrams that failed to open under the receiving key. Each has a soft limit, at which
/// a new handshake should start, and a hard one, at which the key must not be used any
/// more. Configurable so that tests reach them; `standard` is what ships.
public struct KeyLimits: Equatable, Sendable {
  /// Sealed messages after which a new handshake should start.
  public var rekeyAfterMessages: UInt64
  /// Sealed messages after which the sending key seals no more: the counters handed out
  /// are 0 ..< rejectAfterMessages, so a counter (the AEAD's nonce) is never used twice
  /// and never wraps. A received counter at or above it was never sealed by a peer that
  /// keeps the same limit.
  public var rejectAfterMessages: UInt64
  /// Datagrams that failed to open after which a new handshake should start.
  public var rekeyAfterFailedOpens: UInt64
  /// Datagrams that failed to open after which the keys are dropped: each failed open is
  /// an attempt at a forgery, and the AEAD's bound on forgeries holds for so many.
  public var rejectAfterFailedOpens: UInt64

  public init(
    rekeyAfterMessages: UInt64, rejectAfterMessages: UInt64,
    rekeyAfterFailedOpens: UInt64, rejectAfterFailedOpens: UInt64
  ) {
    self.rekeyAfterMessages = rekeyAfterMessages
    self.rejectAfterMessages = rejectAfterMessages
    self.rekeyAfterFailedOpens = rekeyAfterFailedOpens
    self.rejectAfterFailedOpens = rejectAfterFailedOpens
  }

  // The constants are computed, not stored: a stored static is initialized lazily on
  // armv7 (a once-guard at each use; 1.7 KB more object than these, measured with
  // `make embedded-check`), where a computed one folds to its value.

  /// WireGuard's REKEY_AFTER_MESSAGES, 2^60 (the WireGuard paper, §6.1).
  public static var wireGuardRekeyAfterMessages: UInt64 { 1 << 60 }
  /// WireGuard's REJECT_AFTER_MESSAGES, 2^64 - 2^13 - 1 (the WireGuard paper, §6.1): a
  /// margin below 2^64 that WireGuard's window arithmetic needs. Tether's window takes the
  /// whole 64-bit range, so the margin is spare here; it keeps the number a reviewed one.
  public static var wireGuardRejectAfterMessages: UInt64 { UInt64.max - (1 << 13) }
  /// The integrity limit of AEAD_CHACHA20_POLY1305, 2^36 datagrams that fail to open
  /// (RFC 9001 §6.6; it assumes datagrams under 2^14 bytes, which Tether's are). QUIC
  /// counts them across all the keys of a connection, which lives on through key updates;
  /// here each handshake makes new, independent keys, so they are counted per handshake,
  /// as protocol v2 says.
  public static var chaCha20Poly1305IntegrityLimit: UInt64 { 1 << 36 }
  /// A new handshake should start at half the integrity limit: 2^35 more forgeries still
  /// stand between the keys and the hard limit (over four hours of the smallest datagrams
  /// at a gigabit per second), and the handshake takes two round trips.
  public static var chaCha20Poly1305RekeyAfterFailedOpens: UInt64 { 1 << 35 }

  /// What ships. RFC 9001 §6.6 puts ChaCha20-Poly1305's confidentiality limit above any
  /// 62-bit packet count, so the message limits are WireGuard's, set by the counter alone.
  public static var standard: KeyLimits {
    KeyLimits(
      rekeyAfterMessages: wireGuardRekeyAfterMessages,
      rejectAfterMessages: wireGuardRejectAfterMessages,
      rekeyAfterFailedOpens: chaCha20Poly1305RekeyAfterFailedOpens,
      rejectAfterFailedOpens: chaCha20Poly1305IntegrityLimit)
  }
}
