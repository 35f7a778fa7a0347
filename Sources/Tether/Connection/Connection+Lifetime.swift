/// A connection's lifetime (a channel engine's or a login client's) under libev callbacks
/// and re-entrant C calls, in one place.
///
/// `tether_engine_create` (or `tether_rtm_client_create`) retains the connection once, for
/// the app's handle. Every way into a connection (its socket's watcher, its loop's deadline
/// source and netlink watcher, each C function of tether.h) goes through
/// ``Connection/enter(_:_:)``, which counts how deeply calls are nested. Destroy stops
/// everything at once and marks the connection destroyed; the app's retain is given back
/// when the outermost entry returns. So a connection destroyed inside one of its own
/// callbacks stays valid until that callback has returned into Tether, and a destroyed
/// connection is never entered again (the loop may still hold it for the rest of a batch
/// of deadlines: that reference is its own).
///
/// The loop counts the entries too: a connection destroyed inside a callback of *another*
/// connection of its loop is released only when that callback has returned into Tether, as
/// tether.h promises (until then its handle answers as not initialized).
extension Connection {
  /// Runs `body` on `connection` unless it was destroyed, then gives back the app's retain
  /// if `body` (or a callback under it) destroyed it, once no entry into the loop's
  /// connections is still under way. Returns `body`'s result, or nil.
  @discardableResult
  static func enter<C: Connection, R>(_ connection: C, _ body: (C) -> R) -> R? {
    guard connection.beginEntry() else { return nil }
    let result = body(connection)
    connection.endEntry()
    return result
  }

  /// ``enter(_:_:)`` for the functions of tether.h, in two halves: the live connection
  /// behind an app's handle (from tether_engine_create or tether_rtm_client_create), on its
  /// own thread, entered, and 0; or nil and `dead` when the handle is NULL or destroyed,
  /// `foreign` from another thread. The caller calls ``leave()`` when done (in a `defer`).
  /// (Not a closure: the optimizer copied a function taking one for each caller, and this
  /// check is in every function of tether.h that takes a handle.)
  @inline(never)
  static func enter(handle pointer: OpaquePointer?, dead: Int32, foreign: Int32) -> (
    Connection?, Int32
  ) {
    guard let pointer else { return (nil, dead) }
    let connection = Unmanaged<Connection>.fromOpaque(UnsafeRawPointer(pointer))
      .takeUnretainedValue()
    guard !connection.destroyed else { return (nil, dead) }
    guard System.isCurrentThread(connection.owner) else { return (nil, foreign) }
    guard connection.beginEntry() else { return (nil, dead) }
    return (connection, 0)
  }

  /// Ends an entry made by ``enter(handle:dead:foreign:)``.
  func leave() { endEntry() }

  /// Counts one more entry; false when the connection was destroyed. (Kept out of line, as
  /// is ``endEntry()``: ``enter(_:_:)`` is specialized for every result type and call site.)
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
      context.destroyedConnections.append(self)
    }
    if context.entries == 0 && !context.destroyedConnections.isEmpty {
      let released = context.destroyedConnections
      context.destroyedConnections.removeAll()
      for case let destroyed? in released { Unmanaged.passUnretained(destroyed).release() }
    }
  }
}
