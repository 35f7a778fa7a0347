/// A login session's user id (SPEC.md §2): 1...64 bytes of printable ASCII without space.
public struct LoginUserID: Hashable, Sendable {
  public let bytes: [UInt8]

  public static let maximumLength = 64

  /// nil if empty, longer than 64 bytes, or holding a byte outside 0x21...0x7E.
  public init?<C: Collection>(validating bytes: C) where C.Element == UInt8 {
    guard (1...Self.maximumLength).contains(bytes.count) else { return nil }
    for byte in bytes where !(0x21...0x7E).contains(byte) { return nil }
    self.bytes = Array(bytes)
  }
}
