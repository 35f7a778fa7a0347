// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

/// Watches the device's IP addresses and routes with one netlink route socket per loop.
/// A burst of changes (an interface coming up brings several addresses and routes) is let
/// settle for ``settleSeconds``, then the loop asks each engine whether the route to its
/// server now leaves from another source address (``Connection/routeMayHaveChanged()``): a VPN
/// coming up, an IPv6 temporary address rotating or a container bridge appearing rejoins
/// nothing that does not use them. Linux only; where the socket cannot be opened the
/// engines run without it (the app can still report changes with tether_network_changed).
struct NetlinkWatcher {
  /// How long a burst of netlink messages is let settle before the routes are looked at.
  static let settleSeconds = 0.1

  private let watched: WatchedDescriptor
  private let settle: UnsafeMutablePointer<ev_timer>

  /// Starts watching on `loop`; the watchers' data is `context` (a ``LoopContext``).
  init?(loop: OpaquePointer, context: UnsafeMutableRawPointer) {
    let fd = tether_sys_netlink_addresses()
    guard fd >= 0 else { return nil }
    watched = WatchedDescriptor(fd: fd, loop: loop, context: context, callback: netlinkReadable)
    settle = .allocate(capacity: 1)
    settle.initialize(to: ev_timer())
    tether_ev_timer_init(settle, netlinkSettled, Self.settleSeconds, 0)
    tether_ev_set_data_timer(settle, context)
  }

  /// Reads what the socket holds; if an address or route was added or removed, the
  /// settle timer starts (unless it runs already: the burst is one change).
  func drain(loop: OpaquePointer) {
    guard tether_sys_netlink_drain(watched.fd) != 0, tether_ev_is_active_timer(settle) == 0
    else { return }
    tether_ev_timer_set(settle, Self.settleSeconds, 0)
    ev_timer_start(loop, settle)
  }

  func stop(loop: OpaquePointer) {
    ev_timer_stop(loop, settle)
    settle.deinitialize(count: 1)
    settle.deallocate()
    watched.close(loop: loop)
  }
}

private func netlinkReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io else { return }
  LoopContext.enter(tether_ev_data_io(io)) { $0.netlinkReadable() }
}

private func netlinkSettled(
  _ loop: OpaquePointer?, _ timer: UnsafeMutablePointer<ev_timer>?, _ events: Int32
) {
  guard let timer else { return }
  LoopContext.enter(tether_ev_data_timer(timer)) { $0.routesMayHaveChanged() }
}
