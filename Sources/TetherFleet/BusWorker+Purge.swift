// SPDX-License-Identifier: Apache-2.0
import CNats
import Glibc

/// ``FleetCommand/purgeDeletes``, done here rather than by libnats's kvStore_PurgeDeletes:
/// in libnats 3.4.1 that function never frees the put entries its watcher reads, and each
/// holds a reference to the bucket handle, so every purge kept the whole connection alive
/// after the bus stopped (LeakSanitizer showed it). The steps are the same (a watcher reads
/// the bucket, then one purge request per tombstone), and one is safer: each purge removes
/// the key's records up to its tombstone only, so a key created again meanwhile keeps its
/// new value (libnats purges the whole subject).
extension BusWorker {
  func purgeDeletes() {
    let handles = core.update { (core.kv, core.jetStream) }
    guard let kv = handles.0, let js = handles.1 else { return }
    let stream = "KV_" + config.bucket
    for (key, revision) in tombstones(kv) {
      var options = jsOptions()
      jsOptions_Init(&options)
      options.Wait = config.requestTimeout.milliseconds
      options.Stream.Purge.Sequence = revision + 1
      let status = subject(key).withCString { subject in
        options.Stream.Purge.Subject = subject
        return js_PurgeStream(js, stream, &options, nil)
      }
      guard status == NATS_OK else { return }
    }
  }

  /// The keys whose last record is a delete or purge marker, and that record's revision;
  /// what a watcher read within the request timeout (a purge is asked again later).
  private func tombstones(_ kv: OpaquePointer) -> [(key: String, revision: UInt64)] {
    var options = kvWatchOptions()
    kvWatchOptions_Init(&options)
    options.MetaOnly = true
    var made: OpaquePointer?
    guard kvStore_WatchAll(&made, kv, &options) == NATS_OK, let watcher = made else { return [] }
    defer { kvWatcher_Destroy(watcher) }
    let deadline = BusTime.after(config.requestTimeout.seconds)
    var found: [(key: String, revision: UInt64)] = []
    while true {
      let left = Int64((deadline.seconds - BusTime.now().seconds) * 1000)
      var entry: OpaquePointer?
      guard left > 0, kvWatcher_Next(&entry, watcher, left) == NATS_OK, let entry else {
        return found
      }
      defer { kvEntry_Destroy(entry) }
      let operation = kvEntry_Operation(entry)
      if operation == kvOp_Delete || operation == kvOp_Purge, let key = kvEntry_Key(entry) {
        found.append((String(cString: key), kvEntry_Revision(entry)))
      }
    }
  }
}
