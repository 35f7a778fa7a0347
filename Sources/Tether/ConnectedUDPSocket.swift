// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

/// The session's one non-blocking UDP socket, connected to the edge server, so the kernel
/// drops datagrams from any other source before the core sees them; it reads them in
/// batches. (The edge server's socket, which talks to any peer, is TetherEdge's
/// `UnconnectedUDPSocket`.)
struct ConnectedUDPSocket {
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

  /// Receives up to `TETHER_SYS_BATCH` datagrams with one system call, datagram i into
  /// `bytes[i * stride ..< i * stride + length(i)]`; how many (0 when none is waiting, or
  /// on an error, left in errno).
  func receiveBatch(
    into bytes: inout [UInt8], stride: Int, headers: UnsafeMutablePointer<tether_sys_batch>
  ) -> Int {
    let n = bytes.withUnsafeMutableBytes { raw in
      tether_sys_recv_batch(
        fd, headers, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), stride)
    }
    return n > 0 ? Int(n) : 0
  }

  func close() { System.closeDescriptor(fd) }
}
