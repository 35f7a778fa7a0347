// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc
import TetherEdge

/// The watcher thread: it adopts each watcher the worker makes (dropping the one before),
/// and turns `kvWatcher_Next` with a short timeout, so that it sees a new watcher or the
/// bus's stop within that timeout. An entry counts only in the up period that made its
/// watcher: after a `.down`, nothing from the old watcher reaches the edge.
struct BusWatcher {
  let core: BusCore
  /// How long one `kvWatcher_Next` waits (not a timing of the bus: only how soon this thread
  /// notices a change of watcher or a stop).
  static let pollMilliseconds: Int64 = 50

  func run() {
    var current: (watcher: OpaquePointer, period: UInt64)?
    while let next = nextWatcher(current) {
      if let old = current, old.watcher != next.watcher { kvWatcher_Destroy(old.watcher) }
      current = next
      deliverNext(next)
    }
    if let current { kvWatcher_Destroy(current.watcher) }
    if let pending = core.update({ core.pendingWatcher }) { kvWatcher_Destroy(pending.watcher) }
  }

  /// The watcher to read next: a newly handed one, else the current one; waits while there
  /// is none. Nil once the bus stops.
  private func nextWatcher(_ current: (watcher: OpaquePointer, period: UInt64)?) -> (
    watcher: OpaquePointer, period: UInt64
  )? {
    core.update {
      while !core.isStopping {
        if let pending = core.pendingWatcher {
          core.pendingWatcher = nil
          return pending
        }
        if let current { return current }
        core.wait(until: BusTime.after(1))
      }
      return nil
    }
  }

  /// One entry, the end of the snapshot (a NULL entry with NATS_OK), or nothing in time.
  private func deliverNext(_ current: (watcher: OpaquePointer, period: UInt64)) {
    var entry: OpaquePointer?
    let status = kvWatcher_Next(&entry, current.watcher, Self.pollMilliseconds)
    defer { kvEntry_Destroy(entry) }
    guard status == NATS_OK else {
      // A watcher whose subscription failed (not a timeout) waits for the next setup.
      if status != NATS_TIMEOUT { usleep(UInt32(Self.pollMilliseconds) * 1000) }
      return
    }
    let input: FleetInput = entry.map { .entry(Self.fleetEntry($0)) } ?? .snapshotEnd
    core.update {
      guard core.isUp, core.period == current.period else { return }
      core.post(input)
    }
  }

  static func fleetEntry(_ entry: OpaquePointer) -> FleetEntry {
    let key = kvEntry_Key(entry).map { String(cString: $0) } ?? ""
    let revision = kvEntry_Revision(entry)
    let operation = kvEntry_Operation(entry)
    guard operation == kvOp_Put else { return FleetEntry(key: key, value: nil, revision: revision) }
    let count = Int(kvEntry_ValueLen(entry))
    var value: [UInt8] = []
    if count > 0, let bytes = kvEntry_Value(entry) {
      value = Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
    return FleetEntry(key: key, value: value, revision: revision)
  }
}
