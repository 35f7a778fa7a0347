// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherEdge

@testable import TetherFleet

/// The worker's queue: first in first out, writes never dropped, messages bounded.
struct CommandQueueTests {
  private func write(_ tag: UInt64) -> FleetCommand {
    .write(FleetWrite(tag: tag, key: "c.x.\(tag)", operation: .create([1])))
  }

  private func message(_ byte: UInt8) -> FleetCommand {
    .publish(subject: "beacon", payload: [byte])
  }

  @Test func commands_comeOutInTheOrderTheyWentIn_acrossCompactions() {
    var queue = CommandQueue()
    var expected: [FleetCommand] = []
    var taken: [FleetCommand] = []
    for round in 0..<3 {
      let batch = (0..<6000).map { write(UInt64(round * 6000 + $0)) }
      queue.append(contentsOf: batch)
      expected += batch
      for _ in 0..<4500 { taken += queue.popFirst().map { [$0] } ?? [] }
    }
    while let command = queue.popFirst() { taken.append(command) }
    #expect(taken == expected)
    #expect(queue.isEmpty && queue.count == 0)
  }

  @Test func pastTheBound_messagesAreDroppedAndCounted_writesNever() {
    var queue = CommandQueue()
    queue.append(contentsOf: (0..<CommandQueue.maxPublishes).map { message(UInt8($0 % 256)) })
    queue.append(contentsOf: [message(1), write(7), message(2)])
    #expect(queue.droppedPublishes == 2)
    #expect(queue.publishes == CommandQueue.maxPublishes)
    #expect(queue.count == CommandQueue.maxPublishes + 1)
    _ = queue.popFirst()
    queue.append(contentsOf: [message(3), message(4)])
    #expect(queue.droppedPublishes == 3)
    var last: FleetCommand?
    while let command = queue.popFirst() { last = command }
    #expect(last == message(3))
  }

  @Test func removeAll_givesTheWaitingWritesInOrder_andEmpties() {
    var queue = CommandQueue()
    queue.append(contentsOf: [write(1), message(0), write(2), write(3)])
    _ = queue.popFirst()
    let writes = queue.removeAll()
    #expect(writes.map(\.tag) == [2, 3])
    #expect(queue.isEmpty && queue.publishes == 0 && queue.popFirst() == nil)
  }
}
