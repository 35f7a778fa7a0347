// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TetherEdge
import TetherFleet
import TetherLab

/// What a large fleet costs an edge that joins it: every record of the bucket is mirrored
/// (the members of every channel, on every edge). A filler, standing for the other edges,
/// writes `records` member records into a real nats-server's bucket, in the text every edge
/// writes (docs/FLEET.md), through the bus the edges use; then a `tether-edge --fleet` starts
/// and reads the whole state. Its resident memory once it has read it, minus the same for an
/// edge on an empty fleet, is what the mirror costs; the time from its start to its
/// `fleet-state-read` is how long a (re)connection's reconciliation takes at that size.
struct FleetMirror {
  var records = 0
  var writeSeconds = 0.0
  var emptyReadSeconds = 0.0
  var fullReadSeconds = 0.0
  var emptyResidentBytes = 0
  var fullResidentBytes = 0
  /// The longest the full reader's loop spent on one batch of the bus's inputs (its
  /// `longest_input_us`): no datagram of its devices was read meanwhile.
  var fullLongestBatchMicroseconds = 0

  var bytesPerRecord: Double {
    Double(fullResidentBytes - emptyResidentBytes) / Double(max(1, records))
  }

  /// The report's paragraph (docs/BENCHMARKS.md, "A fleet of edges").
  var paragraph: String {
    func f(_ value: Double) -> String { Target.format(value) }
    return """
      An edge joining a large fleet (`FleetMirror`): \(records) member records, written into \
      the bucket in \(f(writeSeconds)) s by a filler through the same bus (one request at a \
      time), then a `tether-edge --fleet` started: it had read the whole state \
      \(f(fullReadSeconds * 1000)) ms after its start (an empty fleet: \
      \(f(emptyReadSeconds * 1000)) ms), and its VmRSS was \
      \(f(Double(fullResidentBytes) / 1_048_576)) MiB against \
      \(f(Double(emptyResidentBytes) / 1_048_576)) MiB on the empty fleet: \
      \(f(bytesPerRecord)) bytes per mirrored record. The loop applies the state as it \
      comes, at most 1024 inputs between two reads of its socket: its longest batch took \
      \(f(Double(fullLongestBatchMicroseconds) / 1000)) ms, no datagram read meanwhile. \
      Every (re)connection to the bus reads the state again at that cost.
      """
  }

  static func measure(edge: String, records: Int) throws -> FleetMirror {
    var mirror = FleetMirror(records: records)
    let nats = try NatsServerProcess()
    defer { nats.remove() }
    try nats.start()
    let empty = try reader(edge: edge, nats: nats, id: "empty")
    mirror.emptyReadSeconds = empty.seconds
    mirror.emptyResidentBytes = empty.resident
    let started = monotonicSeconds()
    try fill(nats: nats, bucket: empty.bucket, records: records)
    mirror.writeSeconds = monotonicSeconds() - started
    let full = try reader(edge: edge, nats: nats, id: "full")
    mirror.fullReadSeconds = full.seconds
    mirror.fullResidentBytes = full.resident
    mirror.fullLongestBatchMicroseconds = full.longestBatch
    return mirror
  }

  /// Starts an edge on the fleet, waits until it has read the state, and stops it: how long
  /// that took, its VmRSS then, its bucket's name (from its `fleet` log line), and the
  /// longest batch of bus inputs its loop applied (its `fleet` counters line).
  private static func reader(edge: String, nats: NatsServerProcess, id: String) throws -> (
    seconds: Double, resident: Int, bucket: String, longestBatch: Int
  ) {
    let started = monotonicSeconds()
    let process = try EdgeProcess(
      binary: edge, timeScale: 1,
      extraArguments: [
        "--fleet", nats.url, "--edge-id", id, "--log-level", "notice", "--print-counters",
      ])
    defer { process.stop() }
    guard process.waitForLog("fleet-state-read", timeout: 120) != nil else {
      throw ValidationError("the \(id) edge did not read the fleet's state")
    }
    let seconds = monotonicSeconds() - started
    // The state read is logged as the loop takes it, and applied right after: its memory
    // is read once the edge is idle again (no CPU time spent in 100 ms).
    guard let pid = process.pid else { throw ValidationError("the \(id) edge stopped") }
    var spent = cpuTicks(pid)
    repeat {
      usleep(100_000)
      let now = cpuTicks(pid)
      if now == spent { break }
      spent = now
    } while monotonicSeconds() - started < 120
    guard let resident = residentBytes(pid),
      let line = process.waitForLog(" bucket=", timeout: 1),
      let bucket = field("bucket", of: line)
    else { throw ValidationError("the \(id) edge's memory or bucket could not be read") }
    process.stop()
    guard let counters = process.output.first(where: { $0.hasPrefix("fleet ") }),
      let longest = field("longest_input_us", of: counters).flatMap({ Int($0) })
    else { throw ValidationError("the \(id) edge printed no fleet counters") }
    return (seconds, resident, bucket, longest)
  }

  /// The value of `name=value` in a line of space-separated fields.
  private static func field(_ name: String, of line: String) -> String? {
    line.split(separator: " ").first(where: { $0.hasPrefix(name + "=") })
      .map { String($0.dropFirst(name.count + 1)) }
  }

  /// Writes `records` joined members of channel `bench`, held by an edge `filler`, into
  /// `bucket` (creates, 256 in flight), and waits for every answer.
  private static func fill(nats: NatsServerProcess, bucket: String, records: Int) throws {
    let bus = try NatsFleetBus(
      config: NatsFleetConfig(
        servers: [nats.url], name: "filler", bucket: bucket, subjectPrefix: "filler",
        pingInterval: .seconds(2), maxPingsOut: 2, reconnectWait: .seconds(1),
        requestTimeout: .seconds(5)))
    defer { bus.stop() }
    let at = UInt64(Date().timeIntervalSince1970 * 1000)
    func record(_ uid: Int) -> FleetCommand {
      let text = "tether-fleet 1 edge=filler inc=00000000000000f1 at=\(at) state=joined"
      return .write(
        FleetWrite(
          tag: UInt64(uid), key: "c.bench.\(uid + 1)", operation: .create(Array(text.utf8))))
    }
    var up = false
    var next = 0
    var answered = 0
    let deadline = monotonicSeconds() + 600
    while answered < records {
      guard monotonicSeconds() < deadline else {
        throw ValidationError("the filler wrote \(answered) of \(records) records in 600 s")
      }
      var descriptor = pollfd(fd: bus.descriptor, events: Int16(POLLIN), revents: 0)
      _ = poll(&descriptor, 1, 100)
      for input in bus.takeInputs() {
        switch input {
        case .up: up = true
        case .down: throw ValidationError("the filler lost the bus")
        case .written(_, .written): answered += 1
        case .written(let tag, let result):
          throw ValidationError("the filler's record \(tag) was not written: \(result)")
        default: break
        }
      }
      guard up else { continue }
      let inFlight = next - answered
      if inFlight < 256 && next < records {
        let count = min(256 - inFlight, records - next)
        bus.submit((next..<next + count).map(record))
        next += count
      }
    }
  }

  /// The CPU time process `pid` has used (user and system, in clock ticks), or nil.
  private static func cpuTicks(_ pid: Int32) -> Int? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return nil }
    // After "pid (name)": state is field 3, utime 14 and stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
      return nil
    }
    return user + system
  }

  /// VmRSS of process `pid`, in bytes.
  private static func residentBytes(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
      let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return nil }
    return kilobytes * 1024
  }
}
