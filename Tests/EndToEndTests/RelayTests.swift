// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

#if canImport(Glibc)
  import Glibc
#endif

/// The relay (the fault proxy, whose profiles cut and heal set) is driven from the test's
/// thread (cut, heal, its port, the clocks, stop) while its own thread forwards: under
/// ThreadSanitizer (make check-tsan) any access to its state that is not under its lock is
/// reported, which fails the run (the proxy's sockets, read from the array its profiles
/// live in, were).
@Suite struct RelayTests {
  /// A UDP socket on 127.0.0.1 with a receive timeout, standing in for a device or the edge.
  private final class Peer {
    let fd: Int32
    init() throws { fd = try Loopback.socket(receiveTimeout: 0.1) }
    deinit { close(fd) }

    var port: UInt16 { Loopback.port(of: fd) }

    func send(_ bytes: [UInt8], to port: UInt16) {
      Loopback.send(fd, bytes, to: Loopback.address(port: port))
    }

    /// One datagram and the port it came from, or nil after the timeout.
    func receive() -> (bytes: [UInt8], port: UInt16)? {
      var buffer = [UInt8](repeating: 0, count: 64)
      guard let (n, from) = Loopback.receive(fd, into: &buffer) else { return nil }
      return (Array(buffer[0..<n]), UInt16(bigEndian: from.sin_port))
    }
  }

  /// 100 round trips device → relay → edge → relay → device, with the link cut and healed
  /// from this thread between them, then stop: the round trips on a healed link arrive (a few may miss the
  /// 100 ms wait on a loaded machine).
  @Test func cutHealAndStop_fromAnotherThread_whileForwarding() throws {
    let edge = try Peer()
    let device = try Peer()
    let relay = try Relay(devices: 1, edgePort: edge.port)
    let answer: [UInt8] = [0x54, 0x48, 0x01, 0x83] + [UInt8](repeating: 0, count: 8)
    var arrived = 0
    for round in 0..<100 {
      if round % 10 == 5 { relay.cut(0) }
      if round % 10 == 6 { relay.heal(0) }
      if round % 10 == 7 { relay.cutUplink(0) }
      if round % 10 == 8 { relay.heal(0) }
      device.send([UInt8(round % 256)], to: relay.port(of: 0))
      guard let (_, back) = edge.receive() else { continue }
      edge.send(answer, to: back)
      if device.receive() != nil { arrived += 1 }
      _ = relay.lastAnswerToDevice(0)
      _ = relay.lastFromDevice(0)
    }
    relay.stop()
    #expect(arrived >= 70, "\(arrived) of the 80 round trips on a healed link")
  }
}
