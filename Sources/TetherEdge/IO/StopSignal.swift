// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// Asks a running ``EdgeLoop`` to return: from another thread, or from SIGINT/SIGTERM once
/// ``installSignalHandlers()`` was called. It sets a flag and writes a byte to a pipe
/// the loop polls, so the loop wakes at once wherever the signal lands.
public final class StopSignal: Sendable {
  private let requested = Atomic<Bool>(false)
  let readEnd: Int32
  let writeEnd: Int32

  public init() throws(SystemError) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw SystemError("pipe", errno: errno) }
    readEnd = ends[0]
    writeEnd = ends[1]
    for end in ends {
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
    }
  }

  deinit {
    _ = signalPipe.compareExchange(
      expected: writeEnd, desired: -1, ordering: .sequentiallyConsistent)
    close(readEnd)
    close(writeEnd)
  }

  public var isRequested: Bool {
    requested.load(ordering: .sequentiallyConsistent)
      || signalReceived.load(ordering: .sequentiallyConsistent) != 0
  }

  /// The signal that asked for the stop (SIGINT or SIGTERM), if one did.
  public var receivedSignal: Int32? {
    let number = signalReceived.load(ordering: .sequentiallyConsistent)
    return number == 0 ? nil : number
  }

  /// Thread-safe; the loop returns after the turn it is in.
  public func request() {
    requested.store(true, ordering: .sequentiallyConsistent)
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  /// Empties the pipe (the loop does it after a wake-up).
  func drain() {
    var bytes = (UInt64(0), UInt64(0))
    while withUnsafeMutableBytes(of: &bytes, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
  }

  /// Routes SIGINT and SIGTERM to this stop signal (the latest one installed wins).
  /// Without `SA_RESTART`, a `poll` the signal interrupts returns EINTR.
  public func installSignalHandlers() {
    _ = signalReceived.load(ordering: .sequentiallyConsistent)  // initialize before any signal
    signalPipe.store(writeEnd, ordering: .sequentiallyConsistent)
    var action = sigaction()
    action.__sigaction_handler.sa_handler = stopSignalHandler
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    // A parent may have started us with these blocked (the mask is inherited): unblock.
    var stops = sigset_t()
    sigemptyset(&stops)
    sigaddset(&stops, SIGINT)
    sigaddset(&stops, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &stops, nil)
  }
}

/// The signal's number, set by the handler (0: none yet); read by every ``StopSignal``.
private let signalReceived = Atomic<Int32>(0)
/// The pipe the handler writes to; -1: none.
private let signalPipe = Atomic<Int32>(-1)

/// Async-signal-safe: two lock-free atomics and `write`, with `errno` put back.
private func stopSignalHandler(_ signal: Int32) {
  let savedErrno = errno
  signalReceived.store(signal, ordering: .sequentiallyConsistent)
  let fd = signalPipe.load(ordering: .sequentiallyConsistent)
  if fd >= 0 {
    var byte: UInt8 = 1
    _ = write(fd, &byte, 1)
  }
  errno = savedErrno
}
