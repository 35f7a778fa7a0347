// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The thread of a lab process of the tests' own (the fault proxy's loop, the attacker's):
/// its body turns while ``isRunning``, and ``stop()`` ends it once and waits for it, so the
/// owner can close the sockets the body reads.
final class LabThread: @unchecked Sendable {
  private let lock = NSLock()
  private var running = true
  private var thread: Thread?

  /// False once ``stop()`` was called: the body returns at its next turn.
  var isRunning: Bool {
    lock.lock()
    defer { lock.unlock() }
    return running
  }

  /// Runs `body` on a thread of its own; called once, by the owner, before any ``stop()``.
  func start(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    self.thread = thread
    thread.start()
  }

  /// Ends the thread and returns once it has finished: true for the call that stopped it,
  /// false for every later one.
  func stop() -> Bool {
    lock.lock()
    let wasRunning = running
    running = false
    lock.unlock()
    guard wasRunning else { return false }
    while thread?.isFinished == false { usleep(1000) }
    return true
  }
}
