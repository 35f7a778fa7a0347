import CTetherSystem

/// The session's one non-blocking UDP socket, connected to the edge server, so the kernel
/// drops datagrams from any other source before the core sees them.
struct UDPSocket {
  let fd: Int32

  /// Opens a socket for `server`'s family and connects it; nil (errno set) on failure.
  init?(connectedTo server: ServerAddress) {
    var address = server.address
    fd = tether_sys_udp_connected(&address)
    guard fd >= 0 else { return nil }
  }

  /// Sends one datagram; false (errno set) if the kernel refused it.
  func send(_ bytes: ArraySlice<UInt8>) -> Bool {
    bytes.withUnsafeBytes { tether_sys_send(fd, $0.baseAddress, $0.count) } == bytes.count
  }

  /// Receives one datagram into `buffer`; its length, or nil when none is waiting (or on
  /// an error, left in errno).
  func receive(into buffer: inout [UInt8]) -> Int? {
    let n = buffer.withUnsafeMutableBytes { tether_sys_recv(fd, $0.baseAddress, $0.count) }
    return n >= 0 ? n : nil
  }

  func close() { System.closeDescriptor(fd) }
}
