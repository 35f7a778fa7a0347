// SPDX-License-Identifier: Apache-2.0
import CNats
import Foundation
import Testing
import TetherEdge
import TetherFleet
import TetherLab

/// The bus when its server goes: killed and restarted, frozen, absent at start, restarted
/// without a memory-stored bucket. Bounds are generous (the machine is shared): each says
/// what it bounds.
@Suite(.serialized) struct NatsFleetBusLossTests {
  @Test func aServerKilledAndRestarted_givesDown_thenUpWithTheWholeSnapshotAgain() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() == [])
    let alice = bus.revision("alice", .create(bytes("a1")))
    let bob = bus.revision("bob", .create(bytes("b1")))
    #expect(alice > 0 && bob > 0)

    server.kill()
    #expect(bus.expect(.down))
    #expect(bus.write("carol", .create([1])) == .failed)
    try server.start()
    let snapshot = bus.snapshot(within: 20)
    #expect(
      snapshot?.sorted { $0.revision < $1.revision } == [
        FleetEntry(key: "alice", value: bytes("a1"), revision: alice),
        FleetEntry(key: "bob", value: bytes("b1"), revision: bob),
      ])
    #expect(bus.revision("carol", .create([1])) > bob)
    // The subscription came back with the connection.
    var heard = false
    let deadline = Date(timeIntervalSinceNow: 10)
    while !heard && Date() < deadline {
      bus.bus.submit([.publish(subject: "beacon", payload: [7])])
      heard = bus.expect(.message(subject: "beacon", payload: [7]), within: 0.5)
    }
    #expect(heard)
  }

  @Test func aFrozenServer_givesDownWithinThePingBound_submitNeverBlocks_andThawingGivesUp()
    throws
  {
    let server = try NatsServerProcess.started()
    // Requests wait 5 s: a .down sooner than that comes from the pings.
    let bus = try BusReader(server: server.url) { $0.requestTimeout = .seconds(5) }
    #expect(bus.snapshot() == [])
    _ = bus.revision("alice", .create(bytes("a1")))

    server.freeze()
    let frozenAt = Date()
    // Writes and publishes while the loss is not yet noticed, and after: each submit
    // returns at once (the worker, not the caller, waits on the frozen server).
    var slowest = 0.0
    var down = false
    var tag: UInt64 = 1000
    while !down && Date().timeIntervalSince(frozenAt) < 10 {
      let start = Date()
      bus.bus.submit([
        .write(FleetWrite(tag: tag, key: "k\(tag)", operation: .create([1]))),
        .publish(subject: "beacon", payload: [1]),
      ])
      slowest = max(slowest, Date().timeIntervalSince(start))
      tag += 1
      down = bus.next(within: 0.05) { $0 == .down } != nil
    }
    let noticedAfter = Date().timeIntervalSince(frozenAt)
    #expect(down)
    // 100 ms pings, 2 out: about 300 ms; 3 s leaves room for a loaded machine.
    #expect(noticedAfter < 3, "down after \(noticedAfter) s")
    #expect(slowest < 0.05, "a submit took \(slowest) s")

    server.thaw()
    let thawedAt = Date()
    #expect(bus.snapshot(within: 20)?.contains { $0.key == "alice" } == true)
    // The write in flight at the loss failed with it, not 5 s later: the up waits for it
    // no longer than the reconnection itself.
    #expect(Date().timeIntervalSince(thawedAt) < 4)
  }

  @Test func aWriteThatTimesOut_failsAndGivesDown_thenUpWhenTheServerAnswersAgain() throws {
    let server = try NatsServerProcess.started()
    // Pings too slow to notice the freeze: only the write's timeout does.
    let bus = try BusReader(server: server.url) {
      $0.pingInterval = .seconds(60)
      $0.requestTimeout = .milliseconds(500)
    }
    #expect(bus.snapshot() == [])
    server.freeze()
    #expect(bus.write("alice", .create([1])) == .failed)
    #expect(bus.expect(.down, within: 1), "the .down follows the failed write")
    #expect(bus.write("bob", .create([1])) == .failed, "and writes fail at once until .up")
    server.thaw()
    #expect(bus.snapshot(within: 20) != nil)
    #expect(bus.revision("carol", .create([1])) > 0)
  }

  @Test func stop_whileTheServerIsFrozen_andAWriteWaitsOnIt_returnsPromptly() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url) {
      $0.pingInterval = .seconds(60)
      $0.requestTimeout = .seconds(10)
    }
    #expect(bus.snapshot() == [])
    server.freeze()
    bus.bus.submit([.write(FleetWrite(tag: 1, key: "alice", operation: .create([1])))])
    usleep(200_000)
    let start = Date()
    bus.bus.stop()
    // The write would wait 10 s: closing the connection ends it.
    #expect(Date().timeIntervalSince(start) < 5)
    server.thaw()
  }

  @Test func anUnreadableCredentialsFile_givesNoUp_andSaysWhy() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url) {
      $0.credentials = .credsFile(server.storeDirectory.path + "/missing.creds")
    }
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    // The worker asks libnats for the reason once a second.
    let deadline = Date(timeIntervalSinceNow: 10)
    while bus.bus.lastProblem == nil && Date() < deadline { usleep(20_000) }
    #expect(bus.bus.lastProblem?.contains("connecting failed") == true)
    #expect(bus.next(within: 0) { $0 == .up } == nil)
  }

  @Test func noServerAtStart_givesNoUp_untilOneListensOnThePort() throws {
    let server = try NatsServerProcess()
    let bus = try BusReader(server: server.url)
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    try server.start()
    #expect(bus.snapshot(within: 20) == [])
  }

  @Test func aMemoryBucketGoneAfterARestart_isMadeAgainAsFileStorage() throws {
    let server = try NatsServerProcess.started()
    try withJetStream(server.url) { js in
      try createMemoryBucket(js, name: "fleet")
      #expect(storage(js, bucket: "fleet") == js_MemoryStorage)
    }
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() == [])
    _ = bus.revision("alice", .create([1]))

    server.kill()
    #expect(bus.expect(.down))
    try server.start()
    #expect(bus.snapshot(within: 20) == [], "the memory bucket's keys went with the server")
    try withJetStream(server.url) { js in
      #expect(storage(js, bucket: "fleet") == js_FileStorage)
    }
  }
}

// MARK: - libnats directly, to set the scene

private func withJetStream(_ url: String, _ body: (OpaquePointer) throws -> Void) throws {
  var connection: OpaquePointer?
  guard natsConnection_ConnectTo(&connection, url) == NATS_OK, let connection else {
    throw LabError("could not connect to \(url)")
  }
  defer { natsConnection_Destroy(connection) }
  var js: OpaquePointer?
  guard natsConnection_JetStream(&js, connection, nil) == NATS_OK, let js else {
    throw LabError("no JetStream context")
  }
  defer { jsCtx_Destroy(js) }
  try body(js)
}

private func createMemoryBucket(_ js: OpaquePointer, name: String) throws {
  var kv: OpaquePointer?
  let status = name.withCString { bucket in
    var config = kvConfig()
    kvConfig_Init(&config)
    config.Bucket = bucket
    config.History = 1
    config.StorageType = js_MemoryStorage
    return js_CreateKeyValue(&kv, js, &config)
  }
  kvStore_Destroy(kv)
  guard status == NATS_OK else { throw LabError("could not create the memory bucket") }
}

private func storage(_ js: OpaquePointer, bucket: String) -> jsStorageType? {
  var info: UnsafeMutablePointer<jsStreamInfo>?
  guard js_GetStreamInfo(&info, js, "KV_" + bucket, nil, nil) == NATS_OK, let info else {
    return nil
  }
  defer { jsStreamInfo_Destroy(info) }
  return info.pointee.Config?.pointee.Storage
}
