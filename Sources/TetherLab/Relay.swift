import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A UDP relay on loopback between devices and the edge server whose link to each device
/// can be cut and healed, in both directions at once or only from the device to the edge
/// (the uplink). Device `i` talks to
/// `127.0.0.1:port(of: i)`; the relay forwards to the edge from a socket of its own per
/// device, so the edge sees each device as a distinct peer. Runs on its own thread with a
/// bounded poll loop until `stop()`.
public final class Relay: @unchecked Sendable {
  /// Device `i`'s two sockets: set before the thread starts, never changed, so both
  /// threads read them without the lock.
  private struct Sockets {
    let front: Int32  // bound on 127.0.0.1, faces the device
    let back: Int32  // connected to the edge
  }

  /// Device `i`'s link state: read and written only under `lock`.
  private struct Link {
    var device = sockaddr_in()
    var deviceKnown = false
    var up = true
    /// False while only the device → edge direction is cut.
    var uplinkUp = true
    var lastToDevice: Double?
    var lastAnswerToDevice: Double?
    var lastFromDevice: Double?
  }

  private let sockets: [Sockets]
  private var links: [Link]
  private let lock = NSLock()
  private var running = true
  private var thread: Thread?

  /// Relays `devices` devices to the edge at 127.0.0.1:`edgePort`.
  public init(devices: Int, edgePort: UInt16) throws {
    var sockets: [Sockets] = []
    for _ in 0..<devices {
      let front = try Self.socket(bindPort: 0)
      let back = try Self.socket(bindPort: 0)
      var edge = Self.loopback(port: edgePort)
      let connected = withUnsafePointer(to: &edge) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(back, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard connected == 0 else { throw LabError("relay: connect to the edge failed") }
      sockets.append(Sockets(front: front, back: back))
    }
    self.sockets = sockets
    links = Array(repeating: Link(), count: devices)
    let thread = Thread { [unowned self] in self.loop() }
    self.thread = thread
    thread.start()
  }

  /// The port device `i` should use as its server.
  public func port(of device: Int) -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(sockets[device].front, $0, &length)
      }
    }
    return UInt16(bigEndian: address.sin_port)
  }

  public func cut(_ device: Int) { setUp(device, false) }
  /// Heals both directions (after ``cut(_:)`` or ``cutUplink(_:)``).
  public func heal(_ device: Int) {
    locked {
      links[device].up = true
      links[device].uplinkUp = true
    }
  }
  /// Drops what device `i` sends; what the edge sends still reaches it.
  public func cutUplink(_ device: Int) { locked { links[device].uplinkUp = false } }

  /// When the relay last passed device `i` an answer to something it sent (ACCEPT,
  /// HEARTBEAT_ACK, SESSION_UNKNOWN, TOKEN_RENEWED, LOGIN_ACCEPT, CHANNEL_ACK): what proves
  /// its round trip.
  public func lastAnswerToDevice(_ device: Int) -> Double? {
    locked { links[device].lastAnswerToDevice }
  }

  /// When the relay last passed a datagram to device `i` (its "last data").
  public func lastToDevice(_ device: Int) -> Double? { locked { links[device].lastToDevice } }
  /// When the relay last passed a datagram from device `i` to the edge.
  public func lastFromDevice(_ device: Int) -> Double? { locked { links[device].lastFromDevice } }

  public func stop() {
    locked { running = false }
    while thread?.isFinished == false { usleep(1000) }
    for socket in sockets {
      close(socket.front)
      close(socket.back)
    }
  }

  private func setUp(_ device: Int, _ up: Bool) { locked { links[device].up = up } }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  private func loop() {
    var fds = sockets.flatMap {
      [
        pollfd(fd: $0.front, events: Int16(POLLIN), revents: 0),
        pollfd(fd: $0.back, events: Int16(POLLIN), revents: 0),
      ]
    }
    var buffer = [UInt8](repeating: 0, count: 2048)
    while locked({ running }) {
      guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
      for (index, fd) in fds.enumerated() where fd.revents & Int16(POLLIN) != 0 {
        let device = index / 2
        if index % 2 == 0 { fromDevice(device, &buffer) } else { fromEdge(device, &buffer) }
      }
    }
  }

  private func fromDevice(_ device: Int, _ buffer: inout [UInt8]) {
    var from = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let n = buffer.withUnsafeMutableBytes { raw in
      withUnsafeMutablePointer(to: &from) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(sockets[device].front, raw.baseAddress, raw.count, 0, $0, &length)
        }
      }
    }
    guard n > 0 else { return }
    let now = monotonicSeconds()
    let up: Bool = locked {
      links[device].device = from
      links[device].deviceKnown = true
      let up = links[device].up && links[device].uplinkUp
      if up { links[device].lastFromDevice = now }
      return up
    }
    guard up else { return }
    _ = buffer.withUnsafeBytes { send(sockets[device].back, $0.baseAddress, n, 0) }
  }

  private func fromEdge(_ device: Int, _ buffer: inout [UInt8]) {
    let n = buffer.withUnsafeMutableBytes {
      recv(sockets[device].back, $0.baseAddress, $0.count, 0)
    }
    guard n > 0 else { return }
    let now = monotonicSeconds()
    let target: sockaddr_in? = locked {
      guard links[device].up, links[device].deviceKnown else { return nil }
      links[device].lastToDevice = now
      if n >= 12, Self.answerTypes.contains(buffer[3]) { links[device].lastAnswerToDevice = now }
      return links[device].device
    }
    guard var to = target else { return }
    _ = buffer.withUnsafeBytes { raw in
      withUnsafePointer(to: &to) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(
            sockets[device].front, raw.baseAddress, n, 0, $0,
            socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
  }

  /// Server → client message types that answer the client (docs/PROTOCOL.md §5).
  static let answerTypes: [UInt8] = [0x81, 0x83, 0x87, 0x88, 0x89, 0x8C]

  /// 127.0.0.1:`port`, as the socket calls take it.
  public static func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }

  static func socket(bindPort port: UInt16) throws -> Int32 {
    let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw LabError("relay: socket failed") }
    var address = loopback(port: port)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else { throw LabError("relay: bind failed") }
    return fd
  }
}

public struct LabError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}
