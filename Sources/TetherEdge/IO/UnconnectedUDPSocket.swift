// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A non-blocking, unconnected UDP socket: each datagram is sent to, or came from, a peer
/// address of its own, as a server that answers many clients needs (and `tether-edge kick`,
/// which sends through one). Every system call the edge server makes on the network goes
/// through this file. Closed when released. (The driver's socket, connected to its one
/// server, is Tether's `ConnectedUDPSocket`.)
public final class UnconnectedUDPSocket {
  public let descriptor: Int32

  /// What one ``receive(into:)`` got.
  public enum Received {
    case datagram(count: Int, from: PeerAddress)
    /// Nothing queued (EAGAIN).
    case empty
    /// Another error; the datagram, if any, is lost.
    case failed(Int32)
  }

  /// An unbound socket of `family` (`AF_INET` or `AF_INET6`).
  public init(family: Int32) throws(SystemError) {
    let fd = socket(
      family,
      Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SystemError("socket", errno: errno) }
    descriptor = fd
  }

  /// A socket bound to `address` (port 0: the system picks a free one).
  public convenience init(bindingTo address: SocketAddress) throws(SystemError) {
    try self.init(family: address.family)
    let result = Self.withSockaddr(address.peer) { bind(descriptor, $0, $1) }
    guard result == 0 else { throw SystemError("bind", errno: errno) }
  }

  deinit { close(descriptor) }

  /// The address the socket is bound to, with the real port.
  public func localAddress() throws(SystemError) -> SocketAddress {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(descriptor, $0, &length)
      }
    }
    guard result == 0 else { throw SystemError("getsockname", errno: errno) }
    return SocketAddress(Self.peer(storage, length: length))
  }

  /// Raises the receive buffer to the system's maximum (`net.core.rmem_max`: a burst of
  /// many devices' datagrams waits there while the loop works) and asks the kernel to count
  /// what it drops for want of room (`SO_RXQ_OVFL`, read by ``ReceiveBatch``). Returns the
  /// buffer's size now (the kernel's doubled figure), or nil if it cannot be read. Neither
  /// call is required: a system that refuses them keeps its defaults.
  @discardableResult
  public func raiseReceiveBuffer() -> Int? {
    if let maximum = Self.systemReceiveMaximum() {
      var size = Int32(clamping: maximum)
      _ = setsockopt(
        descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var on: Int32 = 1
    _ = setsockopt(
      descriptor, SOL_SOCKET, SO_RXQ_OVFL, &on, socklen_t(MemoryLayout<Int32>.size))
    var size: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, &length) == 0 else { return nil }
    return Int(size)
  }

  /// `net.core.rmem_max`, or nil if it cannot be read.
  static func systemReceiveMaximum() -> Int? {
    let fd = open("/proc/sys/net/core/rmem_max", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var text = [UInt8](repeating: 0, count: 32)
    let count = text.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    let digits = text.prefix(count).prefix { $0 >= 0x30 && $0 <= 0x39 }
    guard !digits.isEmpty, digits.count < 12 else { return nil }
    return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
  }

  /// Reads one datagram into `buffer` (a longer one is cut to its size).
  public func receive(into buffer: UnsafeMutableRawBufferPointer) -> Received {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    while true {
      let count = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, $0, &length)
        }
      }
      if count >= 0 { return .datagram(count: count, from: Self.peer(storage, length: length)) }
      let error = errno
      if error == EINTR { continue }
      return error == EAGAIN || error == EWOULDBLOCK ? .empty : .failed(error)
    }
  }

  /// Sends one datagram; false if the system did not take it (it is then lost, as UDP
  /// datagrams may be).
  @discardableResult
  public func send(_ bytes: [UInt8], to peer: PeerAddress) -> Bool {
    let sent = bytes.withUnsafeBytes { data in
      Self.withSockaddr(peer) { address, length in
        sendto(descriptor, data.baseAddress, data.count, Int32(MSG_NOSIGNAL), address, length)
      }
    }
    return sent == bytes.count
  }

  static func peer(_ storage: sockaddr_storage, length: socklen_t) -> PeerAddress {
    withUnsafeBytes(of: storage) { raw in
      PeerAddress(bytes: raw.prefix(min(Int(length), raw.count))) ?? PeerAddress()
    }
  }

  /// Calls `body` with `peer` as a `sockaddr` (copied into aligned storage).
  static func withSockaddr<R>(
    _ peer: PeerAddress, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
  ) -> R {
    var storage = sockaddr_storage()
    peer.withUnsafeBytes { source in
      withUnsafeMutableBytes(of: &storage) { target in
        target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(target.count)))
      }
    }
    return withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(peer.count)) }
    }
  }
}
