// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A real `nats-server` with JetStream for one test (or `make fleet-demo`): on loopback, on a
/// free port, with its own store directory (removed by ``remove()``). It can be killed and
/// started again on the same port and store, and frozen (SIGSTOP) and thawed.
public final class NatsServerProcess: @unchecked Sendable {
  public struct Missing: Error, CustomStringConvertible {
    public var description: String {
      "nats-server is not installed: run `make deps` (the fleet tests start a real server)"
    }
  }

  public let port: Int
  /// More of nats-server's options, for the next ``start()`` (TLS, authorization).
  public var extraArguments: [String] = []
  /// The monitoring port (`-m`), when asked for: ``messageCounts()`` reads it.
  public let monitoringPort: Int?
  public let storeDirectory: URL
  private let executable: URL
  private var process: Process?

  /// Finds nats-server and picks the port and directory; ``start()`` runs it.
  public init(monitoring: Bool = false) throws {
    guard let executable = Self.findExecutable() else { throw Missing() }
    self.executable = executable
    port = try Self.freePort()
    monitoringPort = monitoring ? try Self.freePort() : nil
    storeDirectory = FileManager.default.temporaryDirectory
      .appendingPathComponent("tether-fleet-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: storeDirectory, withIntermediateDirectories: true)
  }

  /// A started server (the common case).
  public static func started() throws -> NatsServerProcess {
    let server = try NatsServerProcess()
    try server.start()
    return server
  }

  public var url: String { "nats://127.0.0.1:\(port)" }

  /// Runs the server and returns once it accepts connections (within 10 s).
  public func start() throws {
    let process = Process()
    process.executableURL = executable
    process.arguments =
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory.path]
      + (monitoringPort.map { ["-m", String($0)] } ?? []) + extraArguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    self.process = process
    let deadline = Date(timeIntervalSinceNow: 10)
    while !Self.accepts(port: port) {
      guard Date() < deadline, process.isRunning else {
        throw LabError("nats-server did not listen on \(port) within 10 s")
      }
      usleep(20_000)
    }
  }

  /// The server's message counters (`/varz`: `in_msgs`, every message a client published
  /// to it, and `out_msgs`, every delivery), from its monitoring port.
  public func messageCounts() throws -> (received: Int, sent: Int) {
    guard let monitoringPort else { throw LabError("nats-server was started without -m") }
    let body = try Self.httpGet(port: monitoringPort, path: "/varz")
    guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)),
      let varz = object as? [String: Any], let received = varz["in_msgs"] as? Int,
      let sent = varz["out_msgs"] as? Int
    else { throw LabError("nats-server's /varz has no in_msgs and out_msgs") }
    return (received, sent)
  }

  /// The body of `GET path` on 127.0.0.1:`port` (HTTP/1.0: the server closes when done).
  static func httpGet(port: Int, path: String) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LabError("socket failed") }
    defer { close(fd) }
    var address = Loopback.address(port: UInt16(port))
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
    guard connected else { throw LabError("no monitoring port at \(port)") }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count
    else { throw LabError("could not send to the monitoring port") }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      response += buffer[0..<count]
      guard response.count < 16 << 20 else { break }
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else {
      throw LabError("the monitoring port gave no HTTP answer")
    }
    return String(text[split.upperBound...])
  }

  /// SIGKILL, and waits for the process to end (its store stays for a restart).
  public func kill() {
    guard let process else { return }
    if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    self.process = nil
  }

  /// SIGSTOP, and returns once every thread of the server is stopped (at most 5 s): kill(2)
  /// returns when the signal is sent, and a thread running on another core answers a moment
  /// longer (a test once saw a write sent after `freeze` go through).
  public func freeze() {
    guard let pid = signal(SIGSTOP) else { return }
    let deadline = Date(timeIntervalSinceNow: 5)
    while !Self.allStopped(pid) && Date() < deadline { usleep(1_000) }
  }

  public func thaw() { signal(SIGCONT) }

  /// Whether every thread of `pid` is in state T (stopped), by /proc/PID/task/*/stat.
  private static func allStopped(_ pid: Int32) -> Bool {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    guard !tasks.isEmpty else { return false }
    return tasks.allSatisfy { task in
      guard
        let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
      else { return false }
      // "PID (comm) S ...": the state follows the last parenthesis.
      return stat[close...].dropFirst(2).first == "T"
    }
  }

  /// Kills the server and deletes its store.
  public func remove() {
    thaw()
    kill()
    try? FileManager.default.removeItem(at: storeDirectory)
  }

  deinit { remove() }

  /// Sends `number` to the server while it runs; returns its pid then, nil when it did not.
  @discardableResult
  private func signal(_ number: Int32) -> Int32? {
    guard let process, process.isRunning else { return nil }
    Glibc.kill(process.processIdentifier, number)
    return process.processIdentifier
  }

  private static func findExecutable() -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/bin"]
    for directory in directories {
      let candidate = URL(fileURLWithPath: directory).appendingPathComponent("nats-server")
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return nil
  }

  /// A port the kernel just gave out on 127.0.0.1 (bound, read, closed).
  public static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LabError("socket failed") }
    defer { close(fd) }
    var address = Loopback.address(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound else { throw LabError("bind failed") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  private static func accepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = Loopback.address(port: UInt16(port))
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }
}
