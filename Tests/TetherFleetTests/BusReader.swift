// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherEdge
import TetherFleet

/// Reads a bus as the edge's loop would (poll its descriptor, then take its inputs) and
/// waits for conditions with deadlines, never a sleep that hopes.
final class BusReader {
  let bus: NatsFleetBus
  /// Every input taken so far, in order; ``next(within:where:)`` consumes from the front.
  private(set) var pending: [FleetInput] = []
  private var nextTag: UInt64 = 1

  init(_ bus: NatsFleetBus) { self.bus = bus }

  /// A bus on `server` with the tests' short timings (100 ms pings, 2 out).
  convenience init(
    server: String, name: String = "edge", bucket: String = "fleet", prefix: String = "fleet.t",
    adjust: (inout NatsFleetConfig) -> Void = { _ in }
  ) throws {
    var config = testConfig(server: server, name: name, bucket: bucket, prefix: prefix)
    adjust(&config)
    self.init(try NatsFleetBus(config: config))
  }

  /// Polls the descriptor for up to `milliseconds` and takes what waits.
  func pump(milliseconds: Int32 = 50) {
    var descriptor = pollfd(fd: bus.descriptor, events: Int16(POLLIN), revents: 0)
    if poll(&descriptor, 1, milliseconds) > 0 { pending += bus.takeInputs() }
  }

  /// The first input matching `predicate` (the ones before it are dropped), or nil when
  /// none came within `seconds`.
  @discardableResult
  func next(within seconds: Double = 10, where predicate: (FleetInput) -> Bool) -> FleetInput? {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while true {
      if let index = pending.firstIndex(where: predicate) {
        let found = pending[index]
        pending.removeFirst(index + 1)
        return found
      }
      guard Date() < deadline else { return nil }
      pump()
    }
  }

  /// Waits for `input` itself.
  func expect(_ input: FleetInput, within seconds: Double = 10) -> Bool {
    next(within: seconds) { $0 == input } != nil
  }

  /// Every input up to and including the next `.snapshotEnd` after the next `.up`; nil
  /// when they did not come in time.
  func snapshot(within seconds: Double = 10) -> [FleetEntry]? {
    guard expect(.up, within: seconds) else { return nil }
    var entries: [FleetEntry] = []
    while let input = next(within: seconds, where: { _ in true }) {
      switch input {
      case .entry(let entry): entries.append(entry)
      case .snapshotEnd: return entries
      default: continue
      }
    }
    return nil
  }

  /// Submits one write and waits for its answer.
  func write(_ key: String, _ operation: FleetWrite.Operation) -> FleetWriteResult? {
    let tag = nextTag
    nextTag += 1
    bus.submit([.write(FleetWrite(tag: tag, key: key, operation: operation))])
    let answer = next {
      if case .written(tag, _) = $0 { return true }
      return false
    }
    guard case .written(_, let result) = answer else { return nil }
    return result
  }

  /// The revision of a `.written` result (0 for any other).
  func revision(_ key: String, _ operation: FleetWrite.Operation) -> UInt64 {
    guard case .written(let revision) = write(key, operation) else { return 0 }
    return revision
  }
}

func testConfig(server: String, name: String, bucket: String, prefix: String) -> NatsFleetConfig {
  NatsFleetConfig(
    servers: [server], name: name, bucket: bucket, subjectPrefix: prefix,
    pingInterval: .milliseconds(100), maxPingsOut: 2, reconnectWait: .milliseconds(100),
    requestTimeout: .seconds(1))
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
