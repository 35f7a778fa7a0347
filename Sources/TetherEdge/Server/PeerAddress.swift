// SPDX-License-Identifier: Apache-2.0
/// Where a datagram came from, as an opaque value: the bytes of a `sockaddr_in` or
/// `sockaddr_in6` for the UDP loop, or any short byte string for tests.
///
/// It holds at most ``capacity`` bytes inline, so a session record that keeps one stays a
/// fixed size and costs no allocation.
public struct PeerAddress: Hashable, Sendable {
  /// The longest address kept (a `sockaddr_in6` is 28 bytes).
  public static let capacity = 32

  private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
  /// How many bytes of `words` are the address.
  public private(set) var count: Int = 0

  /// The empty address.
  public init() {}

  /// Copies `bytes`; nil if longer than ``capacity``.
  public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
    guard bytes.count <= Self.capacity else { return nil }
    withUnsafeMutableBytes(of: &words) { raw in
      for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
    }
    count = bytes.count
  }

  /// The address bytes, in order.
  public var bytes: [UInt8] {
    Swift.withUnsafeBytes(of: words) { Array($0.prefix(count)) }
  }

  /// Calls `body` with the address bytes (no copy).
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try Swift.withUnsafeBytes(of: words) {
      try body(UnsafeRawBufferPointer(rebasing: $0.prefix(count)))
    }
  }

  public static func == (lhs: PeerAddress, rhs: PeerAddress) -> Bool {
    lhs.count == rhs.count && lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1
      && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    hasher.combine(words.0)
    hasher.combine(words.1)
    hasher.combine(words.2)
    hasher.combine(words.3)
  }
}
