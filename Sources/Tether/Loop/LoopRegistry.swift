// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

/// Which ``LoopContext`` serves which libev loop. Connections on several loops on several
/// threads may be created and destroyed at the same time: this table is all they share,
/// and it is touched only at create and destroy, under a mutex. (Everything else of a
/// context belongs to its loop's thread, which is also the thread of every connection on it.)
enum LoopRegistry {
  /// The contexts, linked through ``LoopContext/nextInList`` (a list of a few, and no
  /// array type of its own in the Embedded library).
  nonisolated(unsafe) private static var first: LoopContext?

  /// The context of `loop`, made and started if no connection is on it yet.
  static func context(of loop: OpaquePointer) -> LoopContext {
    tether_sys_registry_lock()
    defer { tether_sys_registry_unlock() }
    var next = first
    while let context = next {
      if context.loop == loop { return context }
      next = context.nextInList
    }
    let context = LoopContext(loop: loop)
    context.start()
    context.nextInList = first
    first = context
    return context
  }

  /// Tears `context` down if no connection is left on it.
  static func release(_ context: LoopContext) {
    guard context.connectionCount == 0 else { return }
    tether_sys_registry_lock()
    context.unlink(from: &first)
    tether_sys_registry_unlock()
    context.stop()
  }
}
