// SPDX-License-Identifier: Apache-2.0
/// A login session's user id: 1...64 bytes of printable ASCII without space (ABI: "User
/// ids").
public struct UserID: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 64
  static var allowed: ASCIISet { .visible }
  static var lengths: ClosedRange<Int> { 1...maximumLength }

  /// - Throws: ``TetherError/invalidUserID`` (-121) if empty, longer than 64 bytes, or
  ///   holding a byte outside 0x21...0x7E.
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard Self.isValid(bytes) else { throw .invalidUserID }
    self.bytes = Array(bytes)
  }

  /// Bytes the wire decoder checked against the same rule as it read them.
  init(checked bytes: [UInt8]) { self.bytes = bytes }

  /// The rule alone, for bytes checked where they lie (a received member event).
  static func isValid<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
    allowed.accepts(bytes, lengths: lengths)
  }
}
