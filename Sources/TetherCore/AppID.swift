/// An application id: 1...64 bytes of printable ASCII without space.
public struct AppID: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 64

  /// - Throws: ``TetherError/invalidAppID`` (-101) if empty, longer than 64 bytes, or
  ///   holding a byte outside 0x21...0x7E.
  public init<C: Collection>(validating bytes: C) throws(TetherError) where C.Element == UInt8 {
    guard ASCIISet.visible.accepts(bytes, lengths: 1...Self.maximumLength) else {
      throw .invalidAppID
    }
    self.bytes = Array(bytes)
  }
}
