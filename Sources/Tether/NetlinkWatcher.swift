import CLibev
import CTetherSystem

/// Watches the device's IP addresses with a netlink route socket on the loop and tells the
/// engine when one is added or removed. Linux only; where the socket cannot be opened the
/// engine runs without it (the app can still report changes with tether_network_changed).
struct NetlinkWatcher {
  let fd: Int32
  let io: UnsafeMutablePointer<ev_io>

  init?(loop: OpaquePointer, handle: UnsafeMutableRawPointer) {
    let fd = tether_sys_netlink_addresses()
    guard fd >= 0 else { return nil }
    self.fd = fd
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
    tether_ev_io_init(io, netlinkReadable, fd, Int32(EV_READ))
    tether_ev_set_data_io(io, handle)
    ev_io_start(loop, io)
  }

  func stop(loop: OpaquePointer) {
    ev_io_stop(loop, io)
    System.closeDescriptor(fd)
    io.deinitialize(count: 1)
    io.deallocate()
  }
}

private func netlinkReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let handle = engineHandle(tether_ev_data_io(io)) else { return }
  let engine = handle.takeUnretainedValue()
  guard let fd = engine.netlink?.fd, tether_sys_netlink_drain(fd) != 0 else { return }
  engine.networkChanged(byUser: false)
  settle(handle)
}
