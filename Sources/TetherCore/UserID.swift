/// A login session's user id: 1...64 bytes of printable ASCII without space (ABI: "User
/// ids").
public struct UserID: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 64

  /// - Throws: ``TetherError/invalidUserID`` (-121) if empty, longer than 64 bytes, or
  ///   holding a byte outside 0x21...0x7E.
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard Self.isValid(bytes) else { throw .invalidUserID }
    self.bytes = Array(bytes)
  }

  /// The rule alone, for bytes checked where they lie (a received member event).
  static func isValid<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
    ASCIISet.visible.accepts(bytes, lengths: 1...maximumLength)
  }
}
