import CTetherSystem

/// Which ``LoopContext`` serves which libev loop. Engines on several loops on several
/// threads may be created and destroyed at the same time: this table is all they share,
/// and it is touched only at create and destroy, under a mutex. (Everything else of a
/// context belongs to its loop's thread, which is also the thread of every engine on it.)
enum LoopRegistry {
  nonisolated(unsafe) private static var contexts: [LoopContext] = []

  /// The context of `loop`, made and started if no engine is on it yet.
  static func context(of loop: OpaquePointer) -> LoopContext {
    tether_sys_registry_lock()
    defer { tether_sys_registry_unlock() }
    for context in contexts where context.loop == loop { return context }
    let context = LoopContext(loop: loop)
    context.start()
    contexts.append(context)
    return context
  }

  /// Tears `context` down if no engine is left on it.
  static func release(_ context: LoopContext) {
    guard context.engineCount == 0 else { return }
    tether_sys_registry_lock()
    if let index = contexts.firstIndex(where: { $0 === context }) { contexts.remove(at: index) }
    tether_sys_registry_unlock()
    context.stop()
  }
}
