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
///
/// With ``faults`` the bus delays and loses what it carries, drawn from a seed (see
/// ``BusFaults``); without (the default) it is the perfect bus above.
struct FleetRig<Client: SimClient> {
  var worlds: [TetherSim.World<Client>] = []
  var bucket = ModelBucket()
  var onBus: [Bool] = []
  var alive: [Bool] = []
  /// What each edge asked of the bus, in order.
  var commands: [[FleetCommand]] = []
  private var inbox: [[Pending]] = []
  /// Per edge and stream: when its last input is due (a stream is delivered in order).
  private var lastDue: [[Stream: Instant]] = []
  private var sent: UInt64 = 0
  var step: Interval = .milliseconds(5)
  /// Nil: every input is delivered at the next pump, nothing is lost.
  var faults: BusFaults?

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
      inbox.append([])
      lastDue.append([:])
      deliver([.up, .snapshotEnd], to: index, on: .watcher)
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
      for index in worlds.indices where alive[index] {
        let inputs = takeDue(index)
        guard !inputs.isEmpty else { continue }
        worlds[index].fleet(inputs)
        moved = true
      }
      if !moved { return }
    }
  }

  private mutating func execute(_ command: FleetCommand, from index: Int) {
    guard onBus[index] else {
      if case .write(let write) = command {
        deliver([.written(tag: write.tag, .failed)], to: index, on: .answers)
      }
      return
    }
    switch command {
    case .publish(let subject, let payload):
      for other in worlds.indices where onBus[other] && alive[other] && !losesMessage() {
        deliver([.message(subject: subject, payload: payload)], to: other, on: .messages)
      }
    case .write(let write):
      let (result, entry) = bucket.apply(write)
      deliver([.written(tag: write.tag, result)], to: index, on: .answers)
      if let entry { watchers(entry) }
    case .purgeDeletes:
      break
    }
  }

  /// Edge `index` loses the bus.
  ///
  /// What the bus had not delivered yet is lost with the old watcher and subscription, and
  /// writes it had not answered are answered `.failed` (they may or may not have happened),
  /// as the real bus does at a disconnection.
  mutating func cut(_ index: Int) {
    onBus[index] = false
    if faults != nil {
      inbox[index] = inbox[index].compactMap { pending in
        guard case .written(let tag, _) = pending.input else { return nil }
        return Pending(
          due: pending.due, order: pending.order, input: .written(tag: tag, .failed))
      }
    }
    deliver([.down], to: index, on: .watcher)
    pump()
  }

  /// Edge `index` is back on the bus: a new watcher, the whole state (after the answers of
  /// the previous connection).
  mutating func reconnect(_ index: Int) {
    onBus[index] = true
    let answered = lastDue[index][.answers] ?? .zero
    lastDue[index][.watcher] = max(lastDue[index][.watcher] ?? .zero, answered)
    deliver(
      [.up] + bucket.snapshot.map { .entry($0) } + [.snapshotEnd], to: index, on: .watcher)
    pump()
  }

  /// The bus loses its bucket (a server whose store was wiped): every edge is cut off, and
  /// comes back to an empty bucket whose revisions count afresh.
  mutating func loseBucket() {
    for index in worlds.indices where alive[index] { cut(index) }
    bucket = ModelBucket()
    for index in worlds.indices where alive[index] { reconnect(index) }
  }

  /// A conditional delete of `key` on `revision` from outside the edges (as another
  /// edge's reap makes it), its tombstone delivered to every edge on the bus.
  mutating func deleteFromBus(_ key: String, revision: UInt64) {
    let delete = FleetWrite(tag: 0, key: key, operation: .delete(revision: revision))
    if let entry = bucket.apply(delete).1 { watchers(entry) }
    pump()
  }

  /// `entry` to the watcher of every edge on the bus.
  private mutating func watchers(_ entry: FleetEntry) {
    for other in worlds.indices where onBus[other] && alive[other] {
      deliver([.entry(entry)], to: other, on: .watcher)
    }
  }

  /// Edge `index` dies (kill -9): nothing more from it, its devices go silent with it.
  mutating func kill(_ index: Int) {
    alive[index] = false
    onBus[index] = false
    inbox[index] = []
  }

  // MARK: - Delivery

  /// What the bus delivers to an edge in order: the watcher's (its `.up`, entries,
  /// `.snapshotEnd`, and `.down`), the answers to its writes, the messages it hears. One
  /// stream's inputs are never reordered; a write's answer and the watcher's entry of it
  /// come in either order.
  enum Stream: Hashable { case watcher, answers, messages }

  private struct Pending {
    var due: Instant
    var order: UInt64
    var input: FleetInput
  }

  /// Queues `inputs` for edge `index`, after what its stream holds: at the next pump on the
  /// perfect bus, a random number of steps later with ``faults``.
  private mutating func deliver(_ inputs: [FleetInput], to index: Int, on stream: Stream) {
    let steps = faults?.delaySteps() ?? 0
    let delay = Interval(nanoseconds: step.nanoseconds * steps)
    let due = max(now + delay, lastDue[index][stream] ?? .zero)
    lastDue[index][stream] = due
    for input in inputs {
      sent &+= 1
      inbox[index].append(Pending(due: due, order: sent, input: input))
    }
  }

  /// The inputs of edge `index` due now, in the order they are due (and were sent).
  private mutating func takeDue(_ index: Int) -> [FleetInput] {
    guard !inbox[index].isEmpty else { return [] }
    let now = now
    let due = inbox[index].filter { $0.due <= now }
    guard !due.isEmpty else { return [] }
    inbox[index].removeAll { $0.due <= now }
    return due.sorted { ($0.due, $0.order) < ($1.due, $1.order) }.map(\.input)
  }

  /// Whether the bus loses one delivery of a message (a core NATS publish: at most once).
  private mutating func losesMessage() -> Bool {
    faults?.losesMessage() ?? false
  }

  /// The KV writes edge `index` made.
  func writes(of index: Int) -> [FleetWrite] {
    commands[index].compactMap { if case .write(let write) = $0 { write } else { nil } }
  }
}

/// A bus that is not perfect, its faults drawn from a seed: every delivery to an edge (a
/// watcher's entry, a write's answer, a message) comes 0 to ``maxDelaySteps`` steps of the
/// rig late, each stream in order; a message (a beacon, an admin action: core NATS, at most
/// once) is lost for one edge with probability ``lossPerMille`` / 1000.
struct BusFaults {
  var random: SeededRandom
  var maxDelaySteps: UInt64
  var lossPerMille: UInt64

  init(seed: UInt64, maxDelaySteps: UInt64, lossPerMille: UInt64) {
    random = SeededRandom(seed: seed)
    self.maxDelaySteps = maxDelaySteps
    self.lossPerMille = lossPerMille
  }

  mutating func delaySteps() -> UInt64 { random.next() % (maxDelaySteps + 1) }

  mutating func losesMessage() -> Bool { random.next() % 1000 < lossPerMille }
}
