#if canImport(Glibc)
  import Glibc
#endif

/// The session's one non-blocking UDP socket, connected to the edge server, so the kernel
/// drops datagrams from any other source before the core sees them.
struct UDPSocket {
  private(set) var fd: Int32

  /// Opens a socket for `server`'s family and connects it; nil (with errno) on failure.
  init?(connectedTo server: ServerAddress) {
    fd = socket(
      server.family,
      Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = server
    let connected = withUnsafePointer(to: &address.storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
    }
    guard connected == 0 else {
      System.closeDescriptor(fd)
      return nil
    }
  }

  /// Sends one datagram; false (with errno) if the kernel refused it.
  func send(_ bytes: ArraySlice<UInt8>) -> Bool {
    bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      == bytes.count
  }

  /// Receives one datagram into `buffer`; its length, or nil when none is waiting (or on an
  /// error, left in errno).
  func receive(into buffer: inout [UInt8]) -> Int? {
    let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
    return n >= 0 ? n : nil
  }

  func close() { System.closeDescriptor(fd) }
}
