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
extension Engine {
  /// Runs `body` on `engine` unless it was destroyed, then gives back the app's retain if
  /// `body` (or a callback under it) destroyed it. Returns `body`'s result, or nil.
  @discardableResult
  static func enter<R>(_ engine: Engine, _ body: (Engine) -> R) -> R? {
    guard !engine.destroyed else { return nil }
    engine.depth += 1
    let result = body(engine)
    engine.depth -= 1
    if engine.destroyed && engine.depth == 0 {
      Unmanaged.passUnretained(engine).release()
    }
    return result
  }
}
