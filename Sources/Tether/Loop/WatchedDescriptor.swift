// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

/// A descriptor this loop owns and the `ev_io` that watches it for reading: the netlink
/// socket and the timerfd of a ``LoopContext``. The watcher lives on the heap because libev
/// keeps a pointer to it while it is started.
struct WatchedDescriptor {
  typealias Callback = @convention(c) (OpaquePointer?, UnsafeMutablePointer<ev_io>?, Int32) -> Void

  let fd: Int32
  private let io: UnsafeMutablePointer<ev_io>

  /// Starts watching `fd` on `loop`, at `priority`; the watcher's data is `context`.
  init(
    fd: Int32, loop: OpaquePointer, context: UnsafeMutableRawPointer, priority: Int32 = 0,
    callback: Callback
  ) {
    self.fd = fd
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
    tether_ev_io_init(io, callback, fd, Int32(EV_READ))
    tether_ev_set_priority_io(io, priority)
    tether_ev_set_data_io(io, context)
    ev_io_start(loop, io)
  }

  /// Stops the watcher, frees it and closes the descriptor.
  func close(loop: OpaquePointer) {
    ev_io_stop(loop, io)
    System.closeDescriptor(fd)
    io.deinitialize(count: 1)
    io.deallocate()
  }
}
