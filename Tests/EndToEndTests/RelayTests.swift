import Foundation
import Testing
import TetherLab

#if canImport(Glibc)
  import Glibc
#endif

/// The relay is driven from the test's thread (cut, heal, the clocks, stop) while its own
/// thread forwards: under ThreadSanitizer (make check-tsan) any access to its state that
/// is not under its lock is reported, which fails the run.
@Suite struct RelayTests {
  /// A UDP socket on 127.0.0.1 with a receive timeout, standing in for a device or the edge.
  private final class Peer {
    let fd: Int32
    init() throws {
      fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
      var address = Relay.loopback(port: 0)
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      guard fd >= 0, bound == 0 else { throw LabError("peer: socket") }
    }
    deinit { close(fd) }

    var port: UInt16 {
      var address = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
      }
      return UInt16(bigEndian: address.sin_port)
    }

    func send(_ bytes: [UInt8], to port: UInt16) {
      var address = Relay.loopback(port: port)
      _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }

    /// One datagram and the port it came from, or nil after the timeout.
    func receive() -> (bytes: [UInt8], port: UInt16)? {
      var buffer = [UInt8](repeating: 0, count: 64)
      var from = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let n = withUnsafeMutablePointer(to: &from) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(fd, &buffer, buffer.count, 0, $0, &length)
        }
      }
      guard n > 0 else { return nil }
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
