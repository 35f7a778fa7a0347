// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// UDP on 127.0.0.1 as the lab's proxy and the tests' raw peers use it: the socket calls
/// with the `sockaddr` casts written once.
public enum Loopback {
  /// 127.0.0.1:`port`, as the socket calls take it.
  public static func address(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }

  /// A UDP socket bound to 127.0.0.1:`port` (0: one the kernel picks), non-blocking unless
  /// `receiveTimeout` (seconds) is given, and connected to 127.0.0.1:`peer` when given.
  public static func socket(
    bindPort port: UInt16 = 0, peer: UInt16? = nil, receiveTimeout: Double? = nil
  ) throws -> Int32 {
    let flags = receiveTimeout == nil ? Int32(SOCK_NONBLOCK.rawValue) : 0
    let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | flags, 0)
    guard fd >= 0 else { throw LabError("udp: socket failed") }
    if let receiveTimeout {
      var timeout = timeval(
        tv_sec: Int(receiveTimeout), tv_usec: Int(receiveTimeout * 1e6) % 1_000_000)
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
    let bound = withSockaddr(address(port: port)) { bind(fd, $0, $1) }
    let connected = peer.map { peer in withSockaddr(address(port: peer)) { connect(fd, $0, $1) } }
    guard bound == 0, connected ?? 0 == 0 else {
      close(fd)
      throw LabError("udp: bind to port \(port) or connect to \(peer ?? 0) failed")
    }
    return fd
  }

  /// The port `fd` is bound to.
  public static func port(of fd: Int32) -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
  }

  /// Sends `bytes` from `fd` to `address`, or to the peer it is connected to when nil;
  /// whether all of it went.
  @discardableResult
  public static func send(_ fd: Int32, _ bytes: [UInt8], to address: sockaddr_in? = nil) -> Bool {
    bytes.withUnsafeBytes { raw in
      guard let address else { return Glibc.send(fd, raw.baseAddress, raw.count, 0) == raw.count }
      return withSockaddr(address) {
        sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) == raw.count
      }
    }
  }

  /// Receives one datagram on `fd` into `buffer`: its length and where it came from, or nil
  /// when none was there (or the wait timed out).
  public static func receive(
    _ fd: Int32, into buffer: inout [UInt8]
  ) -> (count: Int, from: sockaddr_in)? {
    var from = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let n = buffer.withUnsafeMutableBytes { raw in
      withUnsafeMutablePointer(to: &from) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length)
        }
      }
    }
    return n > 0 ? (n, from) : nil
  }

  private static func withSockaddr<T>(
    _ address: sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
  ) -> T {
    withUnsafePointer(to: address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }
}

public struct LabError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}
