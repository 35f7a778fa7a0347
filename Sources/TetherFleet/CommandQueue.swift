// SPDX-License-Identifier: Apache-2.0
import TetherEdge

/// The commands waiting for the worker, first in first out (``FIFO``).
///
/// Its size is bounded: writes by the edge (at most one in flight per key it holds, plus one
/// reap per key of a gone edge: ``FleetState`` never asks another while one is unanswered),
/// messages here. While the worker is stuck in a request (a frozen server answers nothing
/// until the request timeout), beacons keep coming: past ``maxPublishes`` waiting, a new
/// message is dropped and counted, as the bus would lose it if it went down.
struct CommandQueue {
  static let maxPublishes = 1024

  private var items = FIFO<FleetCommand>()
  /// Messages waiting (``FleetCommand/publish(subject:payload:)``).
  private(set) var publishes = 0
  /// Messages dropped because ``maxPublishes`` were waiting.
  private(set) var droppedPublishes: UInt64 = 0

  var isEmpty: Bool { items.isEmpty }
  var count: Int { items.count }

  mutating func append(contentsOf commands: [FleetCommand]) {
    for command in commands {
      if case .publish = command {
        guard publishes < Self.maxPublishes else {
          droppedPublishes &+= 1
          continue
        }
        publishes += 1
      }
      items.append(command)
    }
  }

  mutating func popFirst() -> FleetCommand? {
    let command = items.popFirst()
    if case .publish = command { publishes -= 1 }
    return command
  }

  /// Empties the queue; the writes it held, in order.
  mutating func removeAll() -> [FleetWrite] {
    publishes = 0
    return items.removeAll().compactMap { if case .write(let write) = $0 { write } else { nil } }
  }
}
