/// An engine's lifetime under libev callbacks and re-entrant C calls, in one place.
///
/// `tether_engine_create` retains the engine once, for the app's handle. Every way into an
/// engine (its socket's watcher, its loop's deadline source and netlink watcher, each C
/// function of tether.h) goes through ``Engine/enter(_:_:)``, which counts how deeply calls
/// are nested. `tether_engine_destroy` stops everything at once and marks the engine
/// destroyed; the app's retain is given back when the outermost entry returns. So an
/// engine destroyed inside one of its own callbacks stays valid until that callback has
/// returned into Tether, and a destroyed engine is never entered again (the loop may still
/// hold it for the rest of a batch of deadlines: that reference is its own).
///
/// The loop counts the entries too: an engine destroyed inside a callback of *another*
/// engine of its loop is released only when that callback has returned into Tether, as
/// tether.h promises (until then its handle answers TETHER_ERR_NOT_INITIALIZED).
extension Engine {
  /// Runs `body` on `engine` unless it was destroyed, then gives back the app's retain if
  /// `body` (or a callback under it) destroyed it, once no entry into the loop's engines
  /// is still under way. Returns `body`'s result, or nil.
  @discardableResult
  static func enter<R>(_ engine: Engine, _ body: (Engine) -> R) -> R? {
    guard engine.beginEntry() else { return nil }
    let result = body(engine)
    engine.endEntry()
    return result
  }

  /// Counts one more entry; false when the engine was destroyed. (Kept out of line, as is
  /// ``endEntry()``: ``enter(_:_:)`` is specialized for every result type and call site.)
  @inline(never)
  private func beginEntry() -> Bool {
    guard !destroyed else { return false }
    depth += 1
    context.entries += 1
    return true
  }

  /// Counts one entry less; releases what was destroyed once the outermost entry is done.
  @inline(never)
  private func endEntry() {
    let context = self.context
    depth -= 1
    context.entries -= 1
    if destroyed && depth == 0 {
      context.destroyedEngines.append(self)
    }
    if context.entries == 0 && !context.destroyedEngines.isEmpty {
      let released = context.destroyedEngines
      context.destroyedEngines.removeAll()
      for case let destroyed? in released { Unmanaged.passUnretained(destroyed).release() }
    }
  }
}
