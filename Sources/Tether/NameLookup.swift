// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

/// One look-up of the server's name in flight: getaddrinfo runs on a thread of its own
/// (CTetherSystem's `tether_sys_lookup`), so the loop's thread never blocks on DNS; its
/// answer wakes the engine through an eventfd watched on the engine's loop.
///
/// The job is shared with its thread: ``cancel(loop:)`` stops the watcher and lets go of
/// the engine's share; the thread frees the job when it finishes, if it is still running.
struct NameLookup {
  typealias Callback = @convention(c) (OpaquePointer?, UnsafeMutablePointer<ev_io>?, Int32) -> Void

  enum Answer {
    case resolved(ServerAddress)
    /// getaddrinfo's EAI_* code (EAI_FAMILY: the name has no IPv4 or IPv6 address).
    case failed(Int32)
  }

  private let job: UnsafeMutablePointer<tether_sys_lookup>
  private let io: UnsafeMutablePointer<ev_io>

  /// Starts looking `host` (NUL-terminated) up for `port`, and watching for the answer on
  /// `loop` with `callback`, whose watcher data is `data`. Nil (errno set) when no thread
  /// or descriptor could be had.
  init?(
    host: [UInt8], port: UInt16, loop: OpaquePointer, data: UnsafeMutableRawPointer,
    callback: Callback
  ) {
    let started = host.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { tether_sys_lookup_start($0.baseAddress, port) }
    }
    guard let started else { return nil }
    job = started
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
    tether_ev_io_init(io, callback, tether_sys_lookup_fd(job), Int32(EV_READ))
    tether_ev_set_data_io(io, data)
    ev_io_start(loop, io)
  }

  /// The answer, or nil while the thread is still looking.
  func answer() -> Answer? {
    var address = tether_sys_address()
    let status = tether_sys_lookup_result(job, &address)
    switch status {
    case 0: return .resolved(ServerAddress(address))
    case 1: return nil
    default: return .failed(status)
    }
  }

  /// Stops watching and lets go of the job (its thread may still be running: it frees it).
  func cancel(loop: OpaquePointer) {
    ev_io_stop(loop, io)
    io.deinitialize(count: 1)
    io.deallocate()
    tether_sys_lookup_release(job)
  }
}
