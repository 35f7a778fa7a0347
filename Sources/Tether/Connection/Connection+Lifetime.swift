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
