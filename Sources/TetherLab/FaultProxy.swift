// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram the ``FaultProxy`` passed on, and when (just before it was sent).
public struct FaultDelivery: Sendable {
  public let time: Double
  public let direction: FaultDirection
  /// The version 1 type its version 2 shape stands for (0x02 HEARTBEAT, 0x83
  /// HEARTBEAT_ACK, ...: ``WireShape``; the type itself is sealed).
  public let type: UInt8
  /// A DATA datagram's counter, in its direction (the heartbeat's sequence is sealed).
  public let sequence: UInt32?
  public let duplicate: Bool
  /// Whether the edge can tell it came from the device's session, so takes it as heard
  /// (docs/PROTOCOL.md §12.6, §12.8): an uplink DATA (sealed, its counter fresh) or the first
  /// pass of a CONFIRM. An INIT proves nothing (anyone who saw one can send it again, so
  /// the edge keeps no state for it), nor does a CONFIRM repeated or a datagram the proxy
  /// duplicated.
  public let provesDevice: Bool

  /// An answer to something the device sent (ACCEPT, HEARTBEAT_ACK, SESSION_UNKNOWN,
  /// TOKEN_RENEWED, LOGIN_ACCEPT, CHANNEL_ACK): what proves the device's round trip
  /// (docs/PROTOCOL.md §5).
  public var isAnswer: Bool { direction == .downlink && Self.answerTypes.contains(type) }

  /// Server → client message types that answer the client.
  static let answerTypes: [UInt8] = [0x81, 0x83, 0x87, 0x88, 0x89, 0x8C]
}

/// What the proxy did with one direction's datagrams.
public struct FaultCounts: Sendable, Equatable {
  public var received = 0
  public var dropped = 0
  public var duplicated = 0
  public var held = 0
}

/// A UDP proxy on loopback between devices and the edge (device `i` talks to
/// `127.0.0.1:port(of: i)`; the edge sees each device as a socket of the proxy's own) that
/// applies a ``FaultProfile`` to each direction of each device's link: loss, duplication,
/// delay, reordering, blackholes (``Relay`` is its name where links are only cut and
/// healed). This kernel has no netem, so the faults are made here, in user space, with
/// every random choice drawn from ``FaultDice`` for the proxy's seed. It logs every
/// datagram it delivers, with the time it went out (CLOCK_MONOTONIC, the devices' clock),
/// so a test can compute what the rules imply from what actually passed. One thread, a
/// bounded poll loop, until ``stop()``; the test's thread sets profiles and reads the log
/// meanwhile.
public final class FaultProxy: @unchecked Sendable {
  /// Device `i`'s two sockets: made before the thread starts and never changed, so both
  /// threads read them without the lock.
  private struct Sockets {
    let front: Int32  // bound on 127.0.0.1, faces the device
    let back: Int32  // connected to the edge
  }

  /// Device `i`'s link: read and written only under `lock`.
  private struct Link {
    var device: sockaddr_in?
    var profiles: [FaultProfile] = [.clean, .clean]
    var counts: [FaultCounts] = [FaultCounts(), FaultCounts()]
    /// Per direction and type: how many datagrams of it came (the dice's index).
    var typeCounts: [Int: UInt64] = [:]
    var deliveries: [FaultDelivery] = []
    /// The CONFIRMs passed to the edge so far: a repeat proves nothing new.
    var confirms: Set<[UInt8]> = []
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
  private let sockets: [Sockets]
  private let lock = NSLock()
  /// Under `lock`, with `pending`.
  private var links: [Link]
  private var pending: [Pending] = []
  private let worker = LabThread()
  /// An ``Attacker`` on the path, under `lock`: sees each datagram as it arrives, before
  /// the faults; false keeps the proxy from passing it on.
  private var interceptor: (@Sendable (Int, FaultDirection, [UInt8]) -> Bool)?

  /// Proxies `devices` devices to the edge at 127.0.0.1:`edgePort`, every link clean.
  public init(devices: Int, edgePort: UInt16, seed: UInt64) throws {
    self.seed = seed
    dice = FaultDice(seed: seed)
    sockets = try (0..<devices).map { _ in
      Sockets(
        front: try Loopback.socket(), back: try Loopback.socket(peer: edgePort))
    }
    links = Array(repeating: Link(), count: devices)
    worker.start { [unowned self] in self.loop() }
  }

  deinit { stop() }

  /// The port device `i` should use as its server.
  public func port(of device: Int) -> UInt16 { Loopback.port(of: sockets[device].front) }

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

  /// When the proxy last passed device `i` a datagram for which `match` holds.
  public func lastDelivery(_ device: Int, where match: (FaultDelivery) -> Bool) -> Double? {
    locked { links[device].deliveries.last(where: match)?.time }
  }

  /// When the proxy last passed device `i` an answer (what proves its round trip).
  public func lastAnswerToDevice(_ device: Int) -> Double? {
    lastDelivery(device) { $0.isAnswer }
  }

  /// When the proxy last passed the edge a datagram that proves device `i`'s session
  /// (``FaultDelivery/provesDevice``): the edge's "last heard" of it.
  public func lastFromDevice(_ device: Int) -> Double? {
    lastDelivery(device) { $0.provesDevice }
  }

  /// When the proxy last passed a datagram to device `i` (its "last data").
  public func lastToDevice(_ device: Int) -> Double? {
    lastDelivery(device) { $0.direction == .downlink }
  }

  /// From now on every datagram of every link goes first to `body` (device, direction,
  /// bytes), on the proxy's thread; one it answers false for is not passed on.
  public func intercept(_ body: @escaping @Sendable (Int, FaultDirection, [UInt8]) -> Bool) {
    locked { interceptor = body }
  }

  /// Sends `bytes` on device `i`'s link as if it were one of that link's datagrams: from the
  /// proxy's socket facing the edge (uplink), or to the device from the address it talks to
  /// (downlink). Not logged and given no fault: the attacker's own. Whether it went.
  @discardableResult
  public func inject(_ bytes: [UInt8], device: Int, _ direction: FaultDirection) -> Bool {
    if direction == .uplink { return Loopback.send(sockets[device].back, bytes) }
    guard let to = locked({ links[device].device }) else { return false }
    return Loopback.send(sockets[device].front, bytes, to: to)
  }

  /// Ends the thread and closes the sockets; once (later calls do nothing).
  public func stop() {
    guard worker.stop() else { return }
    for socket in sockets {
      close(socket.front)
      close(socket.back)
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  // MARK: - The loop

  private func loop() {
    var fds = sockets.flatMap {
      [
        pollfd(fd: $0.front, events: Int16(POLLIN), revents: 0),
        pollfd(fd: $0.back, events: Int16(POLLIN), revents: 0),
      ]
    }
    var buffer = [UInt8](repeating: 0, count: 2048)
    while worker.isRunning {
      sendDue()
      guard poll(&fds, nfds_t(fds.count), pollTimeout()) > 0 else { continue }
      // POLLERR too: an ICMP "port unreachable" while the edge is down is read (and
      // cleared) by recv, or poll would report it for ever.
      let ready = Int16(POLLIN) | Int16(POLLERR)
      for (index, fd) in fds.enumerated() where fd.revents & ready != 0 {
        let device = index / 2
        let direction: FaultDirection = index % 2 == 0 ? .uplink : .downlink
        guard let (n, from) = Loopback.receive(fd.fd, into: &buffer) else { continue }
        if direction == .uplink { locked { links[device].device = from } }
        let bytes = Array(buffer[0..<n])
        if let interceptor = locked({ interceptor }), !interceptor(device, direction, bytes) {
          continue
        }
        route(bytes, device: device, direction: direction)
      }
    }
  }

  /// Milliseconds until the next held datagram is due (at most 20).
  private func pollTimeout() -> Int32 {
    guard let due = locked({ pending.map(\.due).min() }) else { return 20 }
    let ms = ((due - monotonicSeconds()) * 1000).rounded(.up)
    return Int32(max(0, min(20, ms)))
  }

  /// Gives one datagram its fate: dropped, or sent now or later, once or twice.
  private func route(_ bytes: [UInt8], device: Int, direction: FaultDirection) {
    let now = monotonicSeconds()
    let type = WireShape.type(of: bytes, direction)
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
      sent = Loopback.send(sockets[device].back, datagram.bytes)
    } else {
      guard let to = locked({ links[device].device }) else { return }
      sent = Loopback.send(sockets[device].front, datagram.bytes, to: to)
    }
    guard sent else { return }
    locked {
      var proves = false
      if datagram.direction == .uplink, !datagram.duplicate {
        switch datagram.bytes.first {
        case WireShape.dataKind: proves = true
        case WireShape.confirmKind: proves = links[device].confirms.insert(datagram.bytes).inserted
        default: break
        }
      }
      links[device].deliveries.append(
        FaultDelivery(
          time: time, direction: datagram.direction,
          type: WireShape.type(of: datagram.bytes, datagram.direction),
          sequence: Self.sequence(of: datagram.bytes), duplicate: datagram.duplicate,
          provesDevice: proves))
    }
  }

  /// A DATA datagram's counter (bytes 9 ..< 17), low 32 bits: the dice's index per shape.
  static func sequence(of bytes: [UInt8]) -> UInt32? {
    guard bytes.count >= 17, bytes[0] == 0x07 else { return nil }
    return UInt32(truncatingIfNeeded: bytes[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
  }
}
