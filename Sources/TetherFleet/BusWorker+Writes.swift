// SPDX-License-Identifier: Apache-2.0
import CNats
import TetherEdge

/// The bucket's conditional writes. Each is one JetStream publish to `$KV.<bucket>.<key>`
/// with `Nats-Expected-Last-Subject-Sequence`, as `kvStore_Create` and `kvStore_Update` make
/// it, but through `js_PublishMsg` itself: that is the call that reports the server's error
/// code (libnats's kvStore_* drop it), and only the code tells a stale revision (10071, a
/// conflict) from any other refusal.
extension BusWorker {
  /// The write's result, and whether the bus counts as lost (a timeout: `.down` follows).
  func perform(_ write: FleetWrite) -> (FleetWriteResult, lost: Bool) {
    guard let js = core.update({ core.jetStream }) else { return (.failed, false) }
    let outcome: PublishOutcome
    switch write.operation {
    case .create(let value):
      outcome = create(js, key: write.key, value: value)
    case .update(let value, let revision):
      outcome = publish(js, key: write.key, value: value, expecting: revision, delete: false)
    case .delete(let revision):
      outcome = publish(js, key: write.key, value: [], expecting: revision, delete: true)
    }
    switch outcome {
    case .written(let revision): return (.written(revision: revision), false)
    case .wrongRevision: return (.conflict, false)
    case .failed(let lost): return (.failed, lost)
    }
  }

  enum PublishOutcome {
    case written(UInt64)
    /// JetStream error 10071: the key's last revision is not the expected one.
    case wrongRevision
    case failed(lost: Bool)
  }

  /// A key that never existed (expected revision 0), or one whose last record is a delete
  /// or purge tombstone (expected: the tombstone's revision), as kvStore_Create does.
  private func create(_ js: OpaquePointer, key: String, value: [UInt8]) -> PublishOutcome {
    let first = publish(js, key: key, value: value, expecting: 0, delete: false)
    guard case .wrongRevision = first, let tombstone = tombstoneRevision(js, key: key) else {
      return first
    }
    return publish(js, key: key, value: value, expecting: tombstone, delete: false)
  }

  /// The revision of the key's last record if that record is a delete or purge marker.
  private func tombstoneRevision(_ js: OpaquePointer, key: String) -> UInt64? {
    var message: OpaquePointer?
    var code = jsErrCode(0)
    let status = js_GetLastMsg(&message, js, "KV_" + config.bucket, subject(key), nil, &code)
    defer { natsMsg_Destroy(message) }
    guard status == NATS_OK, let message else { return nil }
    var operation: UnsafePointer<CChar>?
    guard natsMsgHeader_Get(message, "KV-Operation", &operation) == NATS_OK, let operation
    else { return nil }
    let name = String(cString: operation)
    return name == "DEL" || name == "PURGE" ? natsMsg_GetSequence(message) : nil
  }

  /// One conditional publish: `value` (or a `KV-Operation: DEL` marker) if the key's last
  /// revision is `expecting` (0: the key has no record).
  private func publish(
    _ js: OpaquePointer, key: String, value: [UInt8], expecting revision: UInt64, delete: Bool
  ) -> PublishOutcome {
    var message: OpaquePointer?
    let created = value.withUnsafeBytes { bytes in
      natsMsg_Create(&message, subject(key), nil, bytes.baseAddress, Int32(bytes.count))
    }
    defer { natsMsg_Destroy(message) }
    guard created == NATS_OK, let message else { return .failed(lost: false) }
    var status = natsMsgHeader_Set(
      message, "Nats-Expected-Last-Subject-Sequence", String(revision))
    if delete, status == NATS_OK { status = natsMsgHeader_Set(message, "KV-Operation", "DEL") }
    guard status == NATS_OK else { return .failed(lost: false) }
    var options = jsPubOptions()
    jsPubOptions_Init(&options)
    options.MaxWait = config.requestTimeout.milliseconds
    var ack: UnsafeMutablePointer<jsPubAck>?
    var code = jsErrCode(0)
    status = js_PublishMsg(&ack, js, message, &options, &code)
    defer { jsPubAck_Destroy(ack) }
    if status == NATS_OK, let ack { return .written(ack.pointee.Sequence) }
    if code == JSStreamWrongLastSequenceErr { return .wrongRevision }
    // No answer in time, or no stream to answer (the bucket went away): the bus is lost
    // until a new setup finds the bucket again.
    return .failed(lost: status == NATS_TIMEOUT || status == NATS_NO_RESPONDERS)
  }

  /// The subject of `key`'s records in the bucket's stream.
  func subject(_ key: String) -> String { "$KV.\(config.bucket).\(key)" }
}
