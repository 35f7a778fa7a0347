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
  /// Datagrams the kernel dropped before the edge read them, its receive buffer full
  /// (`SO_RXQ_OVFL`, as the last datagram read reported it; 0 where the kernel does not
  /// say).
  public var receiveDrops: UInt64 { UInt64(batch.kernelDrops) }
  /// The longest the loop spent on one batch of the bus's inputs, in nanoseconds (at most
  /// ``busInputsPerTurn`` inputs, or the end of a state's read): no datagram is read
  /// meanwhile.
  public private(set) var longestBusBatchNanoseconds: UInt64 = 0
  /// The bus's inputs taken and not yet applied: at most ``busInputsPerTurn`` are applied
  /// between two reads of the socket, so a large state read at a (re)connection never
  /// holds the devices' datagrams for long.
  private var busInputs = FIFO<FleetInput>()
  static let busInputsPerTurn = 1024
  /// The socket's receive buffer, raised to the system's maximum at start (nil: unknown).
  public let receiveBuffer: Int?
  /// The fleet's bus (`--fleet`), polled beside the socket; nil for an edge alone. The
  /// server must be in a fleet (``EdgeConfig/fleetIncarnation``) for it to matter.
  public var bus: FleetBus?

  /// Datagrams read and answered a batch at a time.
  private let batch = DatagramBatch()
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
    receiveBuffer = socket.raiseReceiveBuffer()
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
        pollfd(fd: bus?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&fds, nfds_t(fds.count), pollTimeout(now: HostClock.monotonic()))
      if ready < 0 {
        guard errno == EINTR else { throw SystemError("poll", errno: errno) }
        continue
      }
      if fds[1].revents != 0 { stop.drain() }
      if fds[0].revents != 0 { readDatagrams() }
      if fds[2].revents != 0 || !busInputs.isEmpty { readBus() }
      runTimers()
      submitToBus()
    }
  }

  /// Milliseconds until the next deadline, rounded up; -1 (forever) with none.
  func pollTimeout(now: Instant) -> Int32 {
    if !busInputs.isEmpty { return 0 }  // more of the bus's inputs wait
    guard let deadline = server.nextDeadline else { return -1 }
    guard deadline > now else { return 0 }
    let nanoseconds = deadline.since(now).nanoseconds
    let ms = nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 == 0 ? 0 : 1)
    return ms > UInt64(Int32.max) ? .max : Int32(ms)
  }

  /// Reads a batch at a time (``DatagramBatch``), each datagram fed to the server at the
  /// time it is taken, and sends the batch's answers together after it: a datagram waits
  /// for at most a batch's work (32 datagrams) before its answer goes.
  private func readDatagrams() {
    var read = 0
    while read < Self.readsPerTurn {
      let count = batch.receive(from: socket.descriptor)
      for index in 0..<count {
        let (bytes, peer) = batch.datagram(index)
        let outgoing = server.receive(
          bytes, from: peer, now: HostClock.monotonic(), wallClock: HostClock.wall())
        for datagram in outgoing { batch.queue(datagram.bytes, to: datagram.address) }
      }
      flush()
      read += count
      if count < DatagramBatch.capacity { return }
    }
  }

  /// What the bus said, to the server; what the server sends its devices for it, sent.
  private func readBus() {
    guard let bus else { return }
    busInputs.append(contentsOf: bus.takeInputs())
    let inputs = busInputs.popFirst(upTo: Self.busInputsPerTurn)
    guard !inputs.isEmpty else { return }
    let now = HostClock.monotonic()
    let outgoing = server.fleet(inputs, now: now, wallClock: HostClock.wall())
    let spent = HostClock.monotonic().nanoseconds &- now.nanoseconds
    longestBusBatchNanoseconds = max(longestBusBatchNanoseconds, spent)
    for datagram in outgoing { batch.queue(datagram.bytes, to: datagram.address) }
    flush()
  }

  /// The server's writes and messages for the bus, handed over (never blocking).
  private func submitToBus() {
    guard let bus else { return }
    let commands = server.takeFleetCommands()
    if !commands.isEmpty { bus.submit(commands) }
  }

  private func runTimers() {
    let now = HostClock.monotonic()
    guard let deadline = server.nextDeadline, deadline <= now else { return }
    for datagram in server.tick(now: now, wallClock: HostClock.wall()) {
      batch.queue(datagram.bytes, to: datagram.address)
    }
    flush()
  }

  /// Sends what the batch holds, then hands the server's events to ``onEvent``.
  private func flush() {
    sendFailures &+= UInt64(batch.send(on: socket.descriptor))
    if let onEvent {
      for event in server.takeEvents() { onEvent(event) }
    }
  }
}
