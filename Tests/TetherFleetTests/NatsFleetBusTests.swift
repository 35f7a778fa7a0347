// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherEdge
import TetherFleet
import TetherLab

/// The bus against a real nats-server: messages, conditional writes, the watcher's
/// snapshot, the descriptor. Serialized: each test runs its own server, and the machine's
/// two cores are shared.
@Suite(.serialized) struct NatsFleetBusTests {
  // MARK: - Publish and subscribe

  @Test func aPublish_reachesEveryBus_underThePrefix_withThePrefixTakenOff() throws {
    let server = try NatsServerProcess.started()
    let a = try BusReader(server: server.url, name: "edge-a")
    let b = try BusReader(server: server.url, name: "edge-b")
    #expect(a.snapshot() == [])
    #expect(b.snapshot() == [])
    let beacon = FleetInput.message(subject: "beacon.edge-a", payload: bytes("hello"))
    // A subscription may still be on its way to the server just after .up: publish until
    // one arrives.
    var arrived = false
    let deadline = Date(timeIntervalSinceNow: 10)
    while !arrived && Date() < deadline {
      a.bus.submit([.publish(subject: "beacon.edge-a", payload: bytes("hello"))])
      arrived = b.expect(beacon, within: 0.5)
    }
    #expect(arrived)
    #expect(a.expect(beacon), "a bus hears its own messages too")
  }

  @Test func aMessageOutsideThePrefix_isNotDelivered() throws {
    let server = try NatsServerProcess.started()
    let a = try BusReader(server: server.url, name: "edge-a", prefix: "fleet.one")
    let b = try BusReader(server: server.url, name: "edge-b", prefix: "fleet.two")
    #expect(a.snapshot() == [] && b.snapshot() == [])
    a.bus.submit([.publish(subject: "x", payload: [1])])
    a.bus.submit([.publish(subject: "x", payload: [2])])
    #expect(a.expect(.message(subject: "x", payload: [2])))
    #expect(b.next(within: 0.5) { if case .message = $0 { true } else { false } } == nil)
  }

  // MARK: - Conditional writes

  @Test func create_writesAKeyOnce_thenConflicts() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() == [])
    guard case .written(let revision) = bus.write("alice", .create(bytes("edge-1"))) else {
      Issue.record("the create was not written")
      return
    }
    #expect(revision > 0)
    #expect(bus.write("alice", .create(bytes("edge-2"))) == .conflict)
  }

  @Test func update_onTheCurrentRevision_writes_onAStaleOne_conflicts() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() == [])
    let first = bus.revision("alice", .create(bytes("edge-1")))
    let second = bus.revision("alice", .update(bytes("edge-2"), revision: first))
    #expect(second > first)
    #expect(bus.write("alice", .update(bytes("edge-3"), revision: first)) == .conflict)
    #expect(bus.write("bob", .update(bytes("edge-3"), revision: 7)) == .conflict)
  }

  @Test func delete_onTheCurrentRevision_writesATombstone_onAStaleOne_conflicts() throws {
    let server = try NatsServerProcess.started()
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() == [])
    let first = bus.revision("alice", .create(bytes("edge-1")))
    let second = bus.revision("alice", .update(bytes("edge-2"), revision: first))
    #expect(bus.write("alice", .delete(revision: first)) == .conflict)
    let tombstone = bus.revision("alice", .delete(revision: second))
    #expect(tombstone > second)
    #expect(bus.write("alice", .delete(revision: second)) == .conflict)
    // A deleted key can be created again, on top of its tombstone.
    #expect(bus.revision("alice", .create(bytes("edge-3"))) > tombstone)
  }

  @Test func writesWhileDown_failAtOnce() throws {
    let port = try NatsServerProcess.freePort()
    let bus = try BusReader(server: "nats://127.0.0.1:\(port)")
    let start = Date()
    #expect(bus.write("alice", .create([1])) == .failed)
    #expect(Date().timeIntervalSince(start) < 1)
  }

  // MARK: - The watcher

  @Test func aNewBus_seesTheBucketAsASnapshot_thenLiveChanges() throws {
    let server = try NatsServerProcess.started()
    let writer = try BusReader(server: server.url, name: "edge-a")
    #expect(writer.snapshot() == [])
    let alice = writer.revision("alice", .create(bytes("a1")))
    let bob = writer.revision("bob", .create(bytes("b1")))
    let carol = writer.revision("carol", .create(bytes("c1")))
    let carolGone = writer.revision("carol", .delete(revision: carol))
    #expect(alice > 0 && bob > 0 && carolGone > 0)

    let watcher = try BusReader(server: server.url, name: "edge-b")
    let snapshot = watcher.snapshot()
    #expect(
      snapshot?.sorted { $0.revision < $1.revision } == [
        FleetEntry(key: "alice", value: bytes("a1"), revision: alice),
        FleetEntry(key: "bob", value: bytes("b1"), revision: bob),
        FleetEntry(key: "carol", value: nil, revision: carolGone),
      ])

    let dave = writer.revision("dave", .create(bytes("d1")))
    #expect(watcher.expect(.entry(FleetEntry(key: "dave", value: bytes("d1"), revision: dave))))
    let aliceGone = writer.revision("alice", .delete(revision: alice))
    #expect(watcher.expect(.entry(FleetEntry(key: "alice", value: nil, revision: aliceGone))))
  }

  @Test func purgeDeletes_removesTheTombstones() throws {
    let server = try NatsServerProcess.started()
    let writer = try BusReader(server: server.url, name: "edge-a")
    #expect(writer.snapshot() == [])
    let alice = writer.revision("alice", .create(bytes("a1")))
    _ = writer.revision("alice", .delete(revision: alice))
    _ = writer.revision("bob", .create(bytes("b1")))
    writer.bus.submit([.purgeDeletes])
    // Written after the purge, in order: its answer means the purge has run.
    _ = writer.revision("carol", .create(bytes("c1")))
    let watcher = try BusReader(server: server.url, name: "edge-b")
    #expect(watcher.snapshot()?.map(\.key).sorted() == ["bob", "carol"])
  }

  // MARK: - The descriptor

  @Test func theDescriptor_isReadableWhileInputsWait_andClearedByTakingThem() throws {
    let server = try NatsServerProcess.started()
    let bus = try NatsFleetBus(
      config: testConfig(server: server.url, name: "edge", bucket: "fleet", prefix: "fleet.t"))
    var descriptor = pollfd(fd: bus.descriptor, events: Int16(POLLIN), revents: 0)
    #expect(poll(&descriptor, 1, 10_000) == 1, "the .up makes it readable")
    #expect(descriptor.revents & Int16(POLLIN) != 0)
    var inputs = bus.takeInputs()
    // Taking cleared it: readable again only if more came meanwhile.
    if poll(&descriptor, 1, 0) == 1 {
      let more = bus.takeInputs()
      #expect(!more.isEmpty)
      inputs += more
    }
    let deadline = Date(timeIntervalSinceNow: 10)
    while !inputs.contains(.snapshotEnd) && Date() < deadline {
      if poll(&descriptor, 1, 100) == 1 { inputs += bus.takeInputs() }
    }
    #expect(inputs.first == .up && inputs.contains(.snapshotEnd))
    #expect(poll(&descriptor, 1, 0) == 0, "nothing waits: not readable")
    #expect(bus.takeInputs() == [])
  }

  // MARK: - Several servers

  @Test func aDeadServerFirstInTheList_isPassedOver_forTheLiveOneAfterIt() throws {
    let server = try NatsServerProcess.started()
    // A port the kernel just gave out and took back: nothing listens there.
    let dead = "nats://127.0.0.1:\(try NatsServerProcess.freePort())"
    let bus = try BusReader(server: dead) { $0.servers.append(server.url) }
    #expect(bus.snapshot() == [])
    #expect(bus.revision("alice", .create([1])) > 0)
  }

  // MARK: - Lifetime

  /// What belongs to the buses is counted, not the process's: suites running beside this
  /// one start threads and open descriptors of their own (counting the process's, a
  /// fresh-clone run once saw 28 threads against 10 and 61 descriptors against 21). A
  /// bus's threads carry its names (libnats's for its connection, started from its worker,
  /// inherit them); its connections are the sockets to this test's server.
  @Test func stop_leavesNoThreadAndNoDescriptorBehind() throws {
    let server = try NatsServerProcess.started()
    var names: Set<String> = []
    for _ in 0..<5 { names.formUnion(try cycle(server)) }
    // libnats ends a connection's threads a moment after its close returns.
    let deadline = Date(timeIntervalSinceNow: 10)
    while !threads(named: names).isEmpty && Date() < deadline { usleep(20_000) }
    #expect(threads(named: names) == [], "threads of stopped buses")
    while sockets(to: server.port) > 0 && Date() < deadline { usleep(20_000) }
    #expect(sockets(to: server.port) == 0, "connections of stopped buses")
  }

  /// One bus made, used and stopped; returns its threads' names. While it runs the counts
  /// see its threads and its connection (they can tell).
  private func cycle(_ server: NatsServerProcess) throws -> [String] {
    let bus = try BusReader(server: server.url)
    #expect(bus.snapshot() != nil)
    _ = bus.write("k", .create([1]))
    bus.bus.submit([.publish(subject: "x", payload: [1])])
    let names = Set(bus.bus.threadNames)
    #expect(threads(named: names).count >= 2, "the worker, the watcher, libnats's")
    #expect(sockets(to: server.port) >= 1)
    bus.bus.stop()
    return bus.bus.threadNames
  }

  /// The names of this process's threads that are among `names`.
  private func threads(named names: Set<String>) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
      guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
      else { return nil }
      let name = comm.trimmingCharacters(in: .newlines)
      return names.contains(name) ? name : nil
    }
  }

  /// This process's descriptors that are TCP sockets connected to `port` (the kernel's
  /// tables give each socket's remote port and inode, /proc/self/fd each descriptor's).
  private func sockets(to port: Int) -> Int {
    var inodes: Set<Substring> = []
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
      guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
      for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        guard fields.count > 9, let remotePort = fields[2].split(separator: ":").last,
          Int(remotePort, radix: 16) == port
        else { continue }
        inodes.insert(fields[9])
      }
    }
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return descriptors.filter { descriptor in
      guard
        let link = try? FileManager.default.destinationOfSymbolicLink(
          atPath: "/proc/self/fd/\(descriptor)"),
        link.hasPrefix("socket:["), link.hasSuffix("]")
      else { return false }
      return inodes.contains(link.dropFirst(8).dropLast())
    }.count
  }

  @Test func manyBuses_startAndStop_inOneProcess() throws {
    let server = try NatsServerProcess.started()
    for round in 0..<3 {
      let buses = try (0..<3).map { try BusReader(server: server.url, name: "edge-\(round)-\($0)") }
      for bus in buses { #expect(bus.snapshot() != nil) }
      buses[0].bus.stop()
      buses[0].bus.stop()
    }
    let port = try NatsServerProcess.freePort()
    let start = Date()
    let unconnected = try BusReader(server: "nats://127.0.0.1:\(port)")
    unconnected.bus.stop()
    #expect(Date().timeIntervalSince(start) < 5)
  }
}
