// SPDX-License-Identifier: Apache-2.0
/// A channel name that passed the rule of docs/BEHAVIOUR.md §1.6: 1...63 bytes of
/// `a-z A-Z 0-9`, space, and ``!#$%&()+-:;<=.>?@[]^_{}|~,``.
///
/// Validation happens before anything is sent, so a bad name costs the caller
/// ``TetherError/invalidChannelName`` (-102) and never reaches the wire.
public struct ChannelName: Hashable, Sendable {
  /// The name's bytes (ASCII, never empty, never NUL).
  public let bytes: [UInt8]

  public static let maximumLength = 63
  static var lengths: ClosedRange<Int> { 1...maximumLength }

  static let allowed = ASCIISet(low: 0xFFFF_7B7B_0000_0000, high: 0x7FFF_FFFE_EFFF_FFFF)

  /// The rule as docs/BEHAVIOUR.md §1.6 spells it: `allowed` must be this set (ASCIISetTests).
  static let spelled: StaticString =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$%&()+-:;<=.>?@[]^_{}|~,"

  /// Checks `bytes` and keeps a copy.
  /// - Throws: ``TetherError/invalidChannelName`` if empty, longer than 63 bytes, or
  ///   holding any byte outside the allowed set (non-ASCII and NUL included).
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard Self.allowed.accepts(bytes, lengths: Self.lengths) else {
      throw .invalidChannelName
    }
    self.bytes = Array(bytes)
  }

  /// Bytes the wire decoder checked against the same rule as it read them.
  init(checked bytes: [UInt8]) { self.bytes = bytes }
}
