// SPDX-License-Identifier: Apache-2.0
import Glibc
import TetherCore

/// The sending side of `tether-edge kick`: one admin datagram to the server, then up to
/// `timeoutMs` for its one-byte answer.
public enum AdminClient {
  /// Sends `datagram` to `server` and waits for the answer from that address.
  /// - Returns: the server's status, or nil if none came in time (or the answer was not
  ///   one byte of a known status).
  public static func send(_ datagram: [UInt8], to server: SocketAddress, timeoutMs: Int)
    throws(SystemError) -> AdminStatus?
  {
    let socket = try UnconnectedUDPSocket(family: server.family)
    guard socket.send(datagram, to: server.peer) else { throw SystemError("sendto", errno: errno) }
    let deadline = HostClock.monotonic() + .milliseconds(UInt64(max(timeoutMs, 0)))
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let now = HostClock.monotonic()
      guard now < deadline else { return nil }
      var fds = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
      let waitMs = Int32(clamping: (deadline.since(now).nanoseconds + 999_999) / 1_000_000)
      if poll(&fds, 1, waitMs) < 0, errno != EINTR { throw SystemError("poll", errno: errno) }
      let received = buffer.withUnsafeMutableBytes { socket.receive(into: $0) }
      if case .datagram(let count, let peer) = received, peer == server.peer {
        return count == 1 ? AdminStatus(rawValue: buffer[0]) : nil
      }
    }
  }
}
