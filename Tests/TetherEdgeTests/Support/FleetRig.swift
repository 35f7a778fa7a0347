// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSim

@testable import TetherEdge

/// A fleet's bucket in memory, as JetStream's key-value store behaves for the writes an edge
/// makes (checked against a real nats-server in TetherFleetTests): every write takes the
/// stream's next sequence as its revision; a create fails if the key holds a value; an
/// update or a delete fails unless the key's last revision (a delete's tombstone included)
/// is the one given.
struct ModelBucket {
  private(set) var values: [String: (value: [UInt8], revision: UInt64)] = [:]
  private var last: [String: UInt64] = [:]
  private var sequence: UInt64 = 0

  mutating func apply(_ write: FleetWrite) -> (FleetWriteResult, FleetEntry?) {
    switch write.operation {
    case .create(let value):
      guard values[write.key] == nil else { return (.conflict, nil) }
      return put(write.key, value)
    case .update(let value, let revision):
      guard last[write.key] == revision else { return (.conflict, nil) }
      return put(write.key, value)
    case .delete(let revision):
      guard last[write.key] == revision, values[write.key] != nil else { return (.conflict, nil) }
      sequence += 1
      values[write.key] = nil
      last[write.key] = sequence
      return (
        .written(revision: sequence), FleetEntry(key: write.key, value: nil, revision: sequence)
      )
    }
  }

  private mutating func put(_ key: String, _ value: [UInt8]) -> (FleetWriteResult, FleetEntry?) {
    sequence += 1
    values[key] = (value, sequence)
    last[key] = sequence
    return (.written(revision: sequence), FleetEntry(key: key, value: value, revision: sequence))
  }

  /// What a new watcher delivers first: every key that holds a value.
  var snapshot: [FleetEntry] {
    values.sorted { $0.key < $1.key }.map {
      FleetEntry(key: $0.key, value: $0.value.value, revision: $0.value.revision)
    }
  }

  /// The records, parsed.
  var records: [String: FleetRecord] { values.compactMapValues { FleetRecord($0.value) } }
}

/// Several edges of one fleet, each in a simulated world of its own (real edge, real
/// clients), on one virtual clock, with a model bus between them: commands taken after each
/// step of the clock, answers and watcher entries delivered at once (the bus's delay is
/// one step). An edge can be cut off the bus (its writes fail, it hears nothing, and it is
/// given the whole state again when it comes back) or killed (its world stops).
struct FleetRig<Client: SimClient> {
  var worlds: [TetherSim.World<Client>] = []
  var bucket = ModelBucket()
  var onBus: [Bool] = []
  var alive: [Bool] = []
  /// What each edge asked of the bus, in order.
  var commands: [[FleetCommand]] = []
  private var inbox: [[FleetInput]] = []
  var step: Interval = .milliseconds(5)

  /// `edges` edges named edge-0, edge-1, ..., each in incarnation `1000 + index`, on the bus.
  init(edges: Int, config: (Int) -> EdgeConfig = { _ in SimWorld.config() }) {
    for index in 0..<edges {
      var edgeConfig = config(index)
      if let id = EdgeID("edge-\(index)") { edgeConfig.edgeID = id }
      edgeConfig.fleetIncarnation = 1000 + UInt64(index)
      worlds.append(TetherSim.World(config: edgeConfig, seed: UInt64(index) + 1))
      onBus.append(true)
      alive.append(true)
      commands.append([])
      inbox.append([.up, .snapshotEnd])
    }
    pump()
  }

  var now: Instant { worlds[0].now }

  mutating func run(for interval: Interval) {
    let end = now + interval
    while now < end {
      let next = min(now + step, end)
      for index in worlds.indices where alive[index] { worlds[index].run(until: next) }
      for index in worlds.indices where !alive[index] { worlds[index].now = next }
      pump()
    }
  }

  /// Moves commands to the bus and inputs to the edges until neither has more.
  mutating func pump() {
    for _ in 0..<16 {
      var moved = false
      for index in worlds.indices where alive[index] {
        let taken = worlds[index].server.takeFleetCommands()
        commands[index] += taken
        for command in taken {
          moved = true
          execute(command, from: index)
        }
      }
      for index in worlds.indices where alive[index] && !inbox[index].isEmpty {
        let inputs = inbox[index]
        inbox[index] = []
        worlds[index].fleet(inputs)
        moved = true
      }
      if !moved { return }
    }
  }

  private mutating func execute(_ command: FleetCommand, from index: Int) {
    guard onBus[index] else {
      if case .write(let write) = command { inbox[index].append(.written(tag: write.tag, .failed)) }
      return
    }
    switch command {
    case .publish(let subject, let payload):
      for other in worlds.indices where onBus[other] && alive[other] {
        inbox[other].append(.message(subject: subject, payload: payload))
      }
    case .write(let write):
      let (result, entry) = bucket.apply(write)
      inbox[index].append(.written(tag: write.tag, result))
      if let entry {
        for other in worlds.indices where onBus[other] && alive[other] {
          inbox[other].append(.entry(entry))
        }
      }
    case .purgeDeletes:
      break
    }
  }

  /// Edge `index` loses the bus.
  mutating func cut(_ index: Int) {
    onBus[index] = false
    inbox[index].append(.down)
    pump()
  }

  /// Edge `index` is back on the bus: a new watcher, the whole state.
  mutating func reconnect(_ index: Int) {
    onBus[index] = true
    inbox[index] += [.up] + bucket.snapshot.map { .entry($0) } + [.snapshotEnd]
    pump()
  }

  /// The bus loses its bucket (a server whose store was wiped): every edge is cut off, and
  /// comes back to an empty bucket whose revisions count afresh.
  mutating func loseBucket() {
    for index in worlds.indices where alive[index] { cut(index) }
    bucket = ModelBucket()
    for index in worlds.indices where alive[index] { reconnect(index) }
  }

  /// Edge `index` dies (kill -9): nothing more from it, its devices go silent with it.
  mutating func kill(_ index: Int) {
    alive[index] = false
    onBus[index] = false
  }

  /// The KV writes edge `index` made.
  func writes(of index: Int) -> [FleetWrite] {
    commands[index].compactMap { if case .write(let write) = $0 { write } else { nil } }
  }
}
