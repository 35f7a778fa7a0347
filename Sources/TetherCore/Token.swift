// SPDX-License-Identifier: Apache-2.0
/// A token as the app server issued it. Only the edge server verifies it; the core checks
/// only its shape: 0...512 bytes of printable ASCII without space (empty means "no token",
/// for servers that do not ask for one).
public struct Token: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 512
  static var allowed: ASCIISet { .visible }
  static var lengths: ClosedRange<Int> { 0...maximumLength }

  /// - Throws: ``TetherError/invalidToken`` (-110) if longer than 512 bytes or holding a
  ///   byte outside 0x21...0x7E.
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard Self.allowed.accepts(bytes, lengths: Self.lengths) else {
      throw .invalidToken
    }
    self.bytes = Array(bytes)
  }

  public static let empty = Token(checked: [])

  /// Bytes already checked against the rule (by the wire decoder as it read them).
  init(checked bytes: [UInt8]) { self.bytes = bytes }
}
