import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram the ``FaultProxy`` passed on, and when (just before it was sent).
public struct FaultDelivery: Sendable {
  public let time: Double
  public let direction: FaultDirection
  /// The protocol's type byte (0x02 HEARTBEAT, 0x83 HEARTBEAT_ACK, ...).
  public let type: UInt8
  /// HEARTBEAT and HEARTBEAT_ACK: the sequence.
  public let sequence: UInt32?
  public let duplicate: Bool

  /// An answer to something the device sent (ACCEPT, HEARTBEAT_ACK, SESSION_UNKNOWN,
  /// TOKEN_RENEWED): what proves the device's round trip (docs/PROTOCOL.md §5).
  public var isAnswer: Bool { direction == .downlink && Relay.answerTypes.contains(type) }
}

/// What the proxy did with one direction's datagrams.
public struct FaultCounts: Sendable, Equatable {
  public var received = 0
  public var dropped = 0
  public var duplicated = 0
  public var held = 0
}

/// The relay's lab twin with faults: a UDP proxy on loopback between devices and the edge
/// (device `i` talks to `127.0.0.1:port(of: i)`; the edge sees each device as a socket of
/// the proxy's own) that applies a ``FaultProfile`` to each direction of each device's link:
/// loss, duplication, delay, reordering, blackholes. This kernel has no netem, so the
/// faults are made here, in user space, with every random choice drawn from ``FaultDice``
/// for the proxy's seed. It logs every datagram it delivers, with the time it went out
/// (CLOCK_MONOTONIC, the devices' clock), so a test can compute what the rules imply from
/// what actually passed. One thread, a bounded poll loop, until ``stop()``.
public final class FaultProxy: @unchecked Sendable {
  private struct Link {
    var front: Int32  // bound on 127.0.0.1, faces the device
    var back: Int32  // connected to the edge
    var device = sockaddr_in()
    var deviceKnown = false
    var profiles: [FaultProfile] = [.clean, .clean]
    var counts: [FaultCounts] = [FaultCounts(), FaultCounts()]
    /// Per direction and type: how many datagrams of it came (the dice's index).
    var typeCounts: [Int: UInt64] = [:]
    var deliveries: [FaultDelivery] = []
  }

  private struct Pending {
    var due: Double
    var device: Int
    var direction: FaultDirection
    var bytes: [UInt8]
    var duplicate: Bool
  }

  public let seed: UInt64
  private let dice: FaultDice
  private var links: [Link] = []
  private var pending: [Pending] = []
  private let lock = NSLock()
  private var running = true
  private var thread: Thread?

  /// Proxies `devices` devices to the edge at 127.0.0.1:`edgePort`, every link clean.
  public init(devices: Int, edgePort: UInt16, seed: UInt64) throws {
    self.seed = seed
    dice = FaultDice(seed: seed)
    for _ in 0..<devices {
      let front = try Relay.socket(bindPort: 0)
      let back = try Relay.socket(bindPort: 0)
      var edge = Relay.loopback(port: edgePort)
      let connected = withUnsafePointer(to: &edge) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(back, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard connected == 0 else { throw LabError("fault proxy: connect to the edge failed") }
      links.append(Link(front: front, back: back))
    }
    let thread = Thread { [unowned self] in self.loop() }
    self.thread = thread
    thread.start()
  }

  deinit { stop() }

  /// The port device `i` should use as its server.
  public func port(of device: Int) -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(links[device].front, $0, &length)
      }
    }
    return UInt16(bigEndian: address.sin_port)
  }

  /// From now on, `profile` for `direction` of device `i`'s link (both directions when nil).
  /// Datagrams already held keep the fate they were given.
  public func set(_ profile: FaultProfile, _ direction: FaultDirection? = nil, device: Int) {
    locked {
      for d in direction.map({ [$0] }) ?? FaultDirection.allCases {
        links[device].profiles[d.rawValue] = profile
      }
    }
  }

  /// Both directions of device `i`'s link clean again.
  public func heal(_ device: Int) { set(.clean, device: device) }

  public func deliveries(_ device: Int) -> [FaultDelivery] { locked { links[device].deliveries } }

  public func counts(_ device: Int, _ direction: FaultDirection) -> FaultCounts {
    locked { links[device].counts[direction.rawValue] }
  }

  /// When the proxy last passed device `i` an answer (what proves its round trip).
  public func lastAnswerToDevice(_ device: Int) -> Double? {
    deliveries(device).last { $0.isAnswer }?.time
  }

  /// When the proxy last passed a datagram from device `i` to the edge.
  public func lastFromDevice(_ device: Int) -> Double? {
    deliveries(device).last { $0.direction == .uplink }?.time
  }

  public func stop() {
    guard locked({ running }) else { return }
    locked { running = false }
    while thread?.isFinished == false { usleep(1000) }
    for link in links {
      close(link.front)
      close(link.back)
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  // MARK: - The loop

  private func loop() {
    var fds = links.flatMap {
      [
        pollfd(fd: $0.front, events: Int16(POLLIN), revents: 0),
        pollfd(fd: $0.back, events: Int16(POLLIN), revents: 0),
      ]
    }
    var buffer = [UInt8](repeating: 0, count: 2048)
    while locked({ running }) {
      sendDue()
      guard poll(&fds, nfds_t(fds.count), pollTimeout()) > 0 else { continue }
      // POLLERR too: an ICMP "port unreachable" while the edge is down is read (and
      // cleared) by recv, or poll would report it for ever.
      let ready = Int16(POLLIN) | Int16(POLLERR)
      for (index, fd) in fds.enumerated() where fd.revents & ready != 0 {
        let device = index / 2
        let direction: FaultDirection = index % 2 == 0 ? .uplink : .downlink
        guard let n = receive(device, direction, &buffer) else { continue }
        route(Array(buffer[0..<n]), device: device, direction: direction)
      }
    }
  }

  /// Milliseconds until the next held datagram is due (at most 20).
  private func pollTimeout() -> Int32 {
    guard let due = locked({ pending.map(\.due).min() }) else { return 20 }
    let ms = ((due - monotonicSeconds()) * 1000).rounded(.up)
    return Int32(max(0, min(20, ms)))
  }

  private func receive(
    _ device: Int, _ direction: FaultDirection, _ buffer: inout [UInt8]
  ) -> Int? {
    let n: Int
    if direction == .uplink {
      var from = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      n = buffer.withUnsafeMutableBytes { raw in
        withUnsafeMutablePointer(to: &from) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            recvfrom(links[device].front, raw.baseAddress, raw.count, 0, $0, &length)
          }
        }
      }
      if n > 0 {
        locked {
          links[device].device = from
          links[device].deviceKnown = true
        }
      }
    } else {
      n = buffer.withUnsafeMutableBytes { recv(links[device].back, $0.baseAddress, $0.count, 0) }
    }
    return n > 0 ? n : nil
  }

  /// Gives one datagram its fate: dropped, or sent now or later, once or twice.
  private func route(_ bytes: [UInt8], device: Int, direction: FaultDirection) {
    let now = monotonicSeconds()
    let type = bytes.count >= 4 ? bytes[3] : 0
    locked {
      var link = links[device]
      defer { links[device] = link }
      let profile = link.profiles[direction.rawValue]
      link.counts[direction.rawValue].received += 1
      let key = direction.rawValue << 8 | Int(type)
      let counted = link.typeCounts[key, default: 0]
      link.typeCounts[key] = counted + 1
      let index = Self.sequence(of: bytes).map { UInt64($0) } ?? counted
      let roll = { (purpose: FaultDice.Purpose) in
        self.dice.draw(
          device: device, direction: direction, type: type, index: index, purpose: purpose)
      }
      if profile.blackhole || roll(.loss) < profile.loss {
        link.counts[direction.rawValue].dropped += 1
        return
      }
      var due = now + profile.delay
      if roll(.reorder) < profile.reorder {
        due += profile.reorderHold
        link.counts[direction.rawValue].held += 1
      }
      pending.append(
        Pending(due: due, device: device, direction: direction, bytes: bytes, duplicate: false))
      if roll(.duplicate) < profile.duplicate {
        link.counts[direction.rawValue].duplicated += 1
        pending.append(
          Pending(
            due: due + profile.duplicateLag, device: device, direction: direction, bytes: bytes,
            duplicate: true))
      }
    }
    sendDue()
  }

  /// Sends every held datagram whose time has come, in the order they fell due.
  private func sendDue() {
    let now = monotonicSeconds()
    let due: [Pending] = locked {
      let ready = pending.enumerated().filter { $0.element.due <= now }
        .sorted { ($0.element.due, $0.offset) < ($1.element.due, $1.offset) }.map(\.element)
      pending.removeAll { $0.due <= now }
      return ready
    }
    for datagram in due { send(datagram) }
  }

  private func send(_ datagram: Pending) {
    let device = datagram.device
    // Stamped before the send: the device may take the datagram (and print what it did)
    // before sendto returns here, and the log must not put the cause after its effect.
    let time = monotonicSeconds()
    let sent: Bool
    if datagram.direction == .uplink {
      sent = datagram.bytes.withUnsafeBytes {
        Glibc.send(links[device].back, $0.baseAddress, $0.count, 0) == $0.count
      }
    } else {
      guard var to = locked({ links[device].deviceKnown ? links[device].device : nil }) else {
        return
      }
      sent = datagram.bytes.withUnsafeBytes { raw in
        withUnsafePointer(to: &to) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(
              links[device].front, raw.baseAddress, raw.count, 0, $0,
              socklen_t(MemoryLayout<sockaddr_in>.size)) == raw.count
          }
        }
      }
    }
    guard sent else { return }
    let delivery = FaultDelivery(
      time: time, direction: datagram.direction,
      type: datagram.bytes.count >= 4 ? datagram.bytes[3] : 0,
      sequence: Self.sequence(of: datagram.bytes), duplicate: datagram.duplicate)
    locked { links[device].deliveries.append(delivery) }
  }

  /// The sequence of a HEARTBEAT (0x02) or HEARTBEAT_ACK (0x83): bytes 12..<16.
  static func sequence(of bytes: [UInt8]) -> UInt32? {
    guard bytes.count >= 16, bytes[3] == 0x02 || bytes[3] == 0x83 else { return nil }
    return bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) }
  }
}
