// SPDX-License-Identifier: Apache-2.0
#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// Where a connection (a channel engine's or a login client's) is in its life, and so what
/// may happen to it: this file is the whole of it. Every way into a connection goes through
/// ``Connection/enter(_:_:)`` (its socket's and its name look-up's watchers, its loop's
/// deadline source and netlink watcher) or ``Connection/enter(handle:)`` (each function of
/// tether.h that takes a handle), which let it in only while it is `live` or `dispatching`.
///
/// From another thread nothing of this is read: ``Connection/enter(handle:)`` and
/// ``Connection/destroy(handle:)`` look only at ``Connection/owner``, fixed at create, and
/// refuse with WRONG_THREAD.
///
/// Beside a connection's state, its loop (``LoopContext``) counts the entries into its
/// connections under way (``LoopContext/entries``: what holds a destroyed connection until
/// it may be released), and guards its own re-entry: while it fires a batch of deadlines, a
/// connection's datagrams wait (``Connection/awaitingSends``) and the timer is armed once at
/// the end; while it reads one socket, a nested read (an app callback that runs the loop)
/// reads nothing.
enum Lifecycle {
  /// `tether_*_create` made it. ``Connection/start()`` joins its loop's deadline queue and
  /// watches its socket: `live`. If its name's look-up cannot start, it is shut down and
  /// the create fails: `released` at once.
  case created
  /// Started, or a delivery ended. Every watcher and every call of its thread enters. A
  /// call that queues actions performs them: `dispatching`. Destroy: `destroyed`.
  case live
  /// A delivery is performing the session's actions (Connection+Delivery.swift): the app's
  /// callbacks run. A call made from one enters, queues its own actions after those already
  /// queued and returns: the delivery under way performs them too. `tether_leave_channel`
  /// or `tether_rtm_logout` silences what was queued before it. Destroy stops the delivery
  /// at once: `destroyed`.
  case dispatching
  /// Destroy ran, inside a callback or not. Nothing enters again: the app's calls on the
  /// handle return NOT_INITIALIZED, and destroy returns 0 and does nothing. Its loop gives
  /// the app's reference back once no entry into any of the loop's connections is under
  /// way, so a connection destroyed inside a callback, of its own or of another connection
  /// of its loop, stays valid until that callback has returned into Tether, as tether.h
  /// promises: then `released`.
  case destroyed
  /// Its loop gave the app's reference back. Only a reference the loop still holds (its
  /// batch of fired deadlines) may see it, and does nothing; its memory goes with that
  /// reference.
  case released
}

extension Connection {
  /// Destroyed or released: never entered again.
  var isDestroyed: Bool {
    switch lifecycle {
    case .destroyed, .released: true
    case .created, .live, .dispatching: false
    }
  }

  /// Runs `body` on `connection` from one of its loop's watchers, unless it was destroyed;
  /// then gives back what was destroyed meanwhile, once no entry is under way.
  static func enter(_ connection: Connection, _ body: (Connection) -> Void) {
    guard connection.beginEntry() else { return }
    body(connection)
    connection.leave()
  }

  /// ``enter(_:_:)`` for the functions of tether.h, in two halves: the live connection
  /// behind an app's handle on its own thread, entered, and 0; or nil and the code to
  /// return: NOT_INITIALIZED for NULL or a destroyed connection, WRONG_THREAD from another
  /// thread (which reads nothing but the owner). The caller calls ``leave()`` when done
  /// (in a `defer`).
  @inline(never)  // one copy for every function that takes a handle
  static func enter(handle: UnsafeRawPointer?) -> (Connection?, Int32) {
    guard let handle else { return (nil, TetherError.notInitialized.rawValue) }
    let connection = Unmanaged<Connection>.fromOpaque(handle).takeUnretainedValue()
    guard System.isCurrentThread(connection.owner) else {
      return (nil, TetherError.wrongThread.rawValue)
    }
    guard connection.beginEntry() else { return (nil, TetherError.notInitialized.rawValue) }
    return (connection, 0)
  }

  /// `tether_engine_destroy` and `tether_rtm_client_destroy`: 0 for NULL, for a connection
  /// destroyed already, and once this one is shut down (``shutDown()``); WRONG_THREAD,
  /// having read nothing but the owner, from another thread.
  static func destroy(handle: UnsafeRawPointer?) -> Int32 {
    guard let handle else { return 0 }
    let (connection, refusal) = enter(handle: handle)
    guard let connection else {
      return refusal == TetherError.wrongThread.rawValue ? refusal : 0
    }
    connection.shutDown()
    // Given back when the outermost entry returns: this one, or a callback's under it.
    LoopContext.add(connection, to: &connection.context.destroyedConnections)
    connection.leave()
    return 0
  }

  /// Counts one more entry into the loop's connections; false when this one was destroyed.
  private func beginEntry() -> Bool {
    guard lifecycle == .live || lifecycle == .dispatching else { return false }
    context.entries += 1
    return true
  }

  /// Ends an entry; the outermost gives back what was destroyed under it.
  @inline(never)  // one copy for every way in
  func leave() { context.entryEnded() }
}

extension LoopContext {
  /// One entry less; gives the app's references of the connections destroyed meanwhile
  /// back once the outermost entry has returned.
  func entryEnded() {
    entries -= 1
    guard entries == 0 && !destroyedConnections.isEmpty else { return }
    let released = destroyedConnections
    destroyedConnections.removeAll()
    for case let connection? in released {
      connection.lifecycle = .released
      Unmanaged.passUnretained(connection).release()
    }
  }
}
