// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// A non-blocking UDP socket connected to one edge server's address, so the kernel drops
/// datagrams from any other source before the core sees them, read in batches on its
/// loop. Either shared by every connection of its loop that talks to that address (the
/// default: one descriptor and one port for all of them, a receive buffer at the system's
/// maximum, datagrams handed to sessions by ``ClearKey``), or one connection's own, bound
/// to the interface its config names (`bind_interface`). (The edge server's socket, which
/// talks to any peer, is TetherEdge's `UnconnectedUDPSocket`.)
///
/// A change of network replaces its descriptor, not the object: its sessions and their
/// keys stay where they are.
final class DatagramSocket: Linked {
  /// The loop's context it reads for (a shared socket is in its list until closed).
  let context: LoopContext
  private(set) var fd: Int32
  let server: ServerAddress
  /// The interface it is bound to (NUL-terminated), for an own socket; nil: shared.
  let device: [UInt8]?
  var isShared: Bool { device == nil }
  /// How many connections use it.
  var members = 0
  /// The slot of its one connection while it has one; -1 otherwise.
  var soleSlot: Int32 = -1
  /// What names which of its sessions (a shared socket's only).
  var routes = RouteTable()
  /// The kernel's drop count at the last datagram read (SO_RXQ_OVFL).
  var kernelDrops: UInt32 = 0
  /// When a read that emptied it began: whatever arrived before was read.
  var drainedAt = Instant(nanoseconds: 0)
  /// While the loop looks at routes (``Connection/routeMayHaveChanged()``): 0 not looked
  /// at yet, 1 unchanged, 2 its route to the server leaves from another source address
  /// now (or is gone, or that cannot be told), 3 a fresh descriptor was taken for that.
  var routeChange: UInt8 = 0
  /// The next shared socket of its loop.
  var nextInList: DatagramSocket?
  private let io: UnsafeMutablePointer<ev_io>

  /// A socket connected to `server`: shared (`device` nil), or bound to `device`; nil
  /// (errno set) on failure. (The descriptor first, then the object: a failable class
  /// initializer that fails leaked the object in the Embedded library.)
  static func open(to server: ServerAddress, device: [UInt8]?, context: LoopContext)
    -> DatagramSocket?
  {
    guard let fd = open(server, device) else { return nil }
    return DatagramSocket(fd: fd, server: server, device: device, context: context)
  }

  private init(fd: Int32, server: ServerAddress, device: [UInt8]?, context: LoopContext) {
    self.context = context
    self.fd = fd
    self.server = server
    self.device = device
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
  }

  deinit {
    routes.free()
    io.deinitialize(count: 1)
    io.deallocate()
  }

  private static func open(_ server: ServerAddress, _ device: [UInt8]?) -> Int32? {
    var address = server.address
    let fd = device.map { tether_sys_udp_open(&address, $0) } ?? tether_sys_udp_open(&address, nil)
    return fd >= 0 ? fd : nil
  }

  /// Starts the read watcher on its loop; its data is this socket.
  func watch() {
    tether_ev_io_init(io, socketReadable, fd, Int32(EV_READ))
    tether_ev_set_data_io(io, Unmanaged.passUnretained(self).toOpaque())
    ev_io_start(context.loop, io)
  }

  /// A fresh descriptor in place of this one, so the kernel picks the source address (and
  /// port) again; false (errno set), keeping the old one, if none could be had.
  func reopen() -> Bool {
    guard let fresh = Self.open(server, device) else { return false }
    close()
    fd = fresh
    kernelDrops = 0
    watch()
    return true
  }

  /// Sends what waits for it in its loop's batch, stops the watcher and closes the
  /// descriptor.
  func close() {
    context.sendWaiting(on: fd)
    ev_io_stop(context.loop, io)
    System.closeDescriptor(fd)
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

  /// Makes `datagram`'s key known, sent by the connection in `slot` (whose keys are
  /// `keys`): a shared socket hands what comes back under it to that connection.
  func learn(_ datagram: ArraySlice<UInt8>, slot: Int32, keys: inout RouteKeys) {
    guard isShared, let (key, isNonce) = ClearKey.sent(datagram),
      let (added, removed) = keys.learn(key, isNonce: isNonce)
    else { return }
    if removed != 0 { routes.remove(removed, of: slot) }
    routes.set(added, to: slot)
  }

  /// The slot of the connection `datagram` is for: the only one, or the one its key names.
  func claimant(of datagram: ArraySlice<UInt8>) -> Int32? {
    if members == 1 { return soleSlot >= 0 ? soleSlot : nil }
    return ClearKey.received(datagram).flatMap { routes.find($0) }
  }
}

/// A socket's read callback.
private func socketReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let data = tether_ev_data_io(io) else { return }
  let socket = Unmanaged<DatagramSocket>.fromOpaque(data).takeUnretainedValue()
  withExtendedLifetime(socket) { socket.context.readable(socket) }
}
