// SPDX-License-Identifier: Apache-2.0
import Glibc
import TetherCore

/// Runs an ``EdgeServer`` on a UDP socket: `poll` on the socket and the stop pipe, with a
/// timeout until the server's next deadline; read callback → feed the server → send what
/// it returns; deadline → tick → send. One thread owns the loop and everything in it.
public final class EdgeLoop {
  public private(set) var server: SodiumEdgeServer
  public let socket: UnconnectedUDPSocket
  /// Where the socket is bound, with the real port.
  public let localAddress: SocketAddress
  public let stop: StopSignal
  /// Called with each event the server records (set ``EdgeConfig/recordsEvents``).
  public var onEvent: ((EdgeEvent) -> Void)?
  /// Datagrams the system did not take (lost, as UDP datagrams may be).
  public private(set) var sendFailures: UInt64 = 0

  /// Reused for every datagram: 64 KiB holds any UDP payload.
  private var buffer = [UInt8](repeating: 0, count: 65_536)
  /// At most this many datagrams are read per wake-up before the timers get a turn.
  static let readsPerTurn = 256

  public convenience init(server: SodiumEdgeServer, listen: SocketAddress, stop: StopSignal)
    throws(SystemError)
  {
    try self.init(listen: listen, stop: stop) { _ in server }
  }

  /// A loop whose server is made from `config` once the socket is bound: a default edge id
  /// then names the bound port (``EdgeConfig/bound(toPort:)``), so `--listen HOST:0` does
  /// not give every such edge the id `HOST:0`.
  public convenience init(config: EdgeConfig, listen: SocketAddress, stop: StopSignal)
    throws(SystemError)
  {
    try self.init(listen: listen, stop: stop) { bound in
      EdgeServer(config: config.bound(toPort: bound.port))
    }
  }

  /// Binds to `listen`, then makes the server with `makeServer`, given the bound address.
  init(
    listen: SocketAddress, stop: StopSignal, makeServer: (SocketAddress) -> SodiumEdgeServer
  ) throws(SystemError) {
    socket = try UnconnectedUDPSocket(bindingTo: listen)
    localAddress = try socket.localAddress()
    server = makeServer(localAddress)
    self.stop = stop
  }

  /// Serves until ``stop`` is requested.
  /// - Throws: when `poll` fails for another reason than a signal.
  public func run() throws(SystemError) {
    while !stop.isRequested {
      var fds = [
        pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: stop.readEnd, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&fds, nfds_t(fds.count), pollTimeout(now: HostClock.monotonic()))
      if ready < 0 {
        guard errno == EINTR else { throw SystemError("poll", errno: errno) }
        continue
      }
      if fds[1].revents != 0 { stop.drain() }
      if fds[0].revents != 0 { readDatagrams() }
      runTimers()
    }
  }

  /// Milliseconds until the next deadline, rounded up; -1 (forever) with none.
  func pollTimeout(now: Instant) -> Int32 {
    guard let deadline = server.nextDeadline else { return -1 }
    guard deadline > now else { return 0 }
    let nanoseconds = deadline.since(now).nanoseconds
    let ms = nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 == 0 ? 0 : 1)
    return ms > UInt64(Int32.max) ? .max : Int32(ms)
  }

  private func readDatagrams() {
    for _ in 0..<Self.readsPerTurn {
      let received = buffer.withUnsafeMutableBytes { socket.receive(into: $0) }
      guard case .datagram(let count, let peer) = received else { return }
      let outgoing = server.receive(
        buffer[0..<min(count, buffer.count)], from: peer, now: HostClock.monotonic(),
        wallClock: HostClock.wall())
      flush(outgoing)
    }
  }

  private func runTimers() {
    let now = HostClock.monotonic()
    guard let deadline = server.nextDeadline, deadline <= now else { return }
    flush(server.tick(now: now, wallClock: HostClock.wall()))
  }

  private func flush(_ outgoing: [Outgoing]) {
    for datagram in outgoing where !socket.send(datagram.bytes, to: datagram.address) {
      sendFailures &+= 1
    }
    if let onEvent {
      for event in server.takeEvents() { onEvent(event) }
    }
  }
}
