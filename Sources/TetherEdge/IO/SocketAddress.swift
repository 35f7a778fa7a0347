// SPDX-License-Identifier: Apache-2.0
import Glibc
import TetherCore

/// A numeric UDP endpoint: `A.B.C.D:PORT` or `[IPv6]:PORT` (no names, no zone ids).
public struct SocketAddress: Equatable, Sendable, CustomStringConvertible {
  /// The `sockaddr_in` or `sockaddr_in6` bytes.
  public let peer: PeerAddress

  /// Why a `HOST:PORT` text was refused.
  public enum ParseError: Error, Equatable, Sendable {
    /// No `:PORT`, or brackets that do not close.
    case missingPort
    /// The port is not a decimal number in 0...65535.
    case invalidPort
    /// The host is not a numeric IPv4 or IPv6 address.
    case invalidHost
  }

  public init(_ peer: PeerAddress) { self.peer = peer }

  /// Parses `127.0.0.1:7000`, `0.0.0.0:0`, `[::1]:7000`, `[::]:0`: TetherCore's
  /// `HostPort` (the driver's parser too) splits the text, `inet_pton` reads the host.
  public init(parsing text: String) throws(ParseError) {
    let parsed: HostPort
    do {
      parsed = try HostPort(parsing: Array(text.utf8))
    } catch {
      switch error {
      case .missingPort: throw .missingPort
      case .invalidPort: throw .invalidPort
      case .invalidHost: throw .invalidHost
      }
    }
    let host = String(decoding: parsed.host[0..<(parsed.host.count - 1)], as: UTF8.self)
    if parsed.bracketed {
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = parsed.port.bigEndian
      guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw .invalidHost }
      peer = Self.peer(of: address)
    } else {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = parsed.port.bigEndian
      guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw .invalidHost }
      peer = Self.peer(of: address)
    }
  }

  /// `AF_INET` or `AF_INET6` (0 for bytes that are neither).
  public var family: Int32 {
    peer.withUnsafeBytes { raw in
      raw.count >= 2 ? Int32(raw.loadUnaligned(as: sa_family_t.self)) : 0
    }
  }

  public var port: UInt16 {
    peer.withUnsafeBytes { raw in
      raw.count >= 4 ? UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) : 0
    }
  }

  /// `127.0.0.1:7000` or `[::1]:7000`.
  public var description: String {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let ok: Bool = peer.withUnsafeBytes { raw in
      switch family {
      case AF_INET where raw.count >= MemoryLayout<sockaddr_in>.size:
        var address = raw.loadUnaligned(as: sockaddr_in.self)
        return inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil
      case AF_INET6 where raw.count >= MemoryLayout<sockaddr_in6>.size:
        var address = raw.loadUnaligned(as: sockaddr_in6.self)
        return inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count)) != nil
      default:
        return false
      }
    }
    guard ok else { return "?" }
    let host = String(
      decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
  }

  private static func peer<T>(of address: T) -> PeerAddress {
    // Both sockaddr kinds fit PeerAddress.capacity (16 and 28 bytes).
    Swift.withUnsafeBytes(of: address) { PeerAddress(bytes: $0) } ?? PeerAddress()
  }
}
