// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The edge's stable name, `--edge-id` (docs/PROTOCOL.md §12.9): part of every reset value,
/// so it must stay the same across restarts of one edge and differ between the edges of a
/// fleet. 1 … 255 bytes of printable ASCII without space (it appears in logs as it is).
public struct EdgeID: Hashable, Sendable, CustomStringConvertible {
  public let bytes: [UInt8]

  public static let maximumLength = 255

  /// nil if empty, longer than 255 bytes, or holding a byte outside 0x21 … 0x7E.
  public init?(_ text: String) {
    let bytes = Array(text.utf8)
    guard (1...Self.maximumLength).contains(bytes.count),
      bytes.allSatisfy({ (0x21...0x7E).contains($0) })
    else { return nil }
    self.bytes = bytes
  }

  /// Bytes known to be valid (a constant).
  private init(checked text: String) { bytes = Array(text.utf8) }

  /// The default: the host name, a colon and the port (stable on one host, distinct across
  /// a fleet unless two hosts share a name); nil if that is not a valid id.
  public init?(hostName: String, port: UInt16) {
    self.init("\(hostName):\(port)")
  }

  /// This host's default at `port`: ``init(hostName:port:)`` with `gethostname`'s name;
  /// "localhost" when it has none that makes a valid id.
  public static func hostDefault(port: UInt16) -> EdgeID {
    var name = [CChar](repeating: 0, count: 256)
    guard gethostname(&name, name.count - 1) == 0 else {
      return EdgeID(checked: "localhost:\(port)")
    }
    let host = String(decoding: name.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    return EdgeID(hostName: host, port: port) ?? EdgeID(checked: "localhost:\(port)")
  }

  public var description: String { String(decoding: bytes, as: UTF8.self) }
}
