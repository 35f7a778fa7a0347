// SPDX-License-Identifier: Apache-2.0
/// An application id: 1...64 bytes of printable ASCII without space.
public struct AppID: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 64
  static var allowed: ASCIISet { .visible }
  static var lengths: ClosedRange<Int> { 1...maximumLength }

  /// - Throws: ``TetherError/invalidAppID`` (-101) if empty, longer than 64 bytes, or
  ///   holding a byte outside 0x21...0x7E.
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard Self.allowed.accepts(bytes, lengths: Self.lengths) else {
      throw .invalidAppID
    }
    self.bytes = Array(bytes)
  }

  /// Bytes the wire decoder checked against the same rule as it read them.
  init(checked bytes: [UInt8]) { self.bytes = bytes }
}
