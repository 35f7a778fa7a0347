import CLibev
import CTetherSystem

/// Watches the device's IP addresses with one netlink route socket per loop and tells the
/// loop's engines when one is added or removed. Linux only; where the socket cannot be
/// opened the engines run without it (the app can still report changes with
/// tether_network_changed).
struct NetlinkWatcher {
  private let watched: WatchedDescriptor

  /// Starts watching on `loop`; the watcher's data is `context` (a ``LoopContext``).
  init?(loop: OpaquePointer, context: UnsafeMutableRawPointer) {
    let fd = tether_sys_netlink_addresses()
    guard fd >= 0 else { return nil }
    watched = WatchedDescriptor(fd: fd, loop: loop, context: context, callback: netlinkReadable)
  }

  /// True when what the socket held says an address was added or removed.
  func drain() -> Bool { tether_sys_netlink_drain(watched.fd) != 0 }

  func stop(loop: OpaquePointer) { watched.close(loop: loop) }
}

private func netlinkReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io else { return }
  LoopContext.enter(tether_ev_data_io(io)) { $0.addressesMayHaveChanged() }
}
