// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// A real `nats-server` with JetStream for one test: on loopback, on a free port, with its
/// own store directory (removed by ``remove()``). It can be killed and started again on the
/// same port and store, and frozen (SIGSTOP) and thawed.
final class NatsServerProcess {
  struct Missing: Error, CustomStringConvertible {
    var description: String {
      "nats-server is not installed: run `make deps` (the fleet tests start a real server)"
    }
  }

  let port: Int
  let storeDirectory: URL
  /// More of nats-server's options, for the next ``start()`` (TLS).
  var extraArguments: [String] = []
  private let executable: URL
  private var process: Process?

  /// Finds nats-server and picks the port and directory; ``start()`` runs it.
  init() throws {
    guard let executable = Self.findExecutable() else { throw Missing() }
    self.executable = executable
    port = try Self.freePort()
    storeDirectory = FileManager.default.temporaryDirectory
      .appendingPathComponent("tether-fleet-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: storeDirectory, withIntermediateDirectories: true)
  }

  /// A started server (the common case).
  static func started() throws -> NatsServerProcess {
    let server = try NatsServerProcess()
    try server.start()
    return server
  }

  var url: String { "nats://127.0.0.1:\(port)" }

  /// Runs the server and returns once it accepts connections (within 10 s).
  func start() throws {
    let process = Process()
    process.executableURL = executable
    process.arguments =
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory.path] + extraArguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    self.process = process
    let deadline = Date(timeIntervalSinceNow: 10)
    while !Self.accepts(port: port) {
      guard Date() < deadline, process.isRunning else {
        throw ServerError("nats-server did not listen on \(port) within 10 s")
      }
      usleep(20_000)
    }
  }

  /// SIGKILL, and waits for the process to end (its store stays for a restart).
  func kill() {
    guard let process else { return }
    if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    self.process = nil
  }

  /// SIGSTOP, and returns once the kernel shows the process stopped (a signal is delivered
  /// a moment after kill returns: the server could answer one more request meanwhile).
  func freeze() {
    signal(SIGSTOP)
    waitForState { $0 == "T" }
  }

  func thaw() {
    signal(SIGCONT)
    waitForState { $0 != "T" }
  }

  /// Polls the state letter of /proc/PID/stat (within 5 s).
  private func waitForState(_ wanted: (Character) -> Bool) {
    guard let process, process.isRunning else { return }
    let path = "/proc/\(process.processIdentifier)/stat"
    let deadline = Date(timeIntervalSinceNow: 5)
    while Date() < deadline {
      // "PID (name) STATE ...": the state follows the last ')'.
      if let stat = try? String(contentsOfFile: path, encoding: .utf8),
        let close = stat.lastIndex(of: ")"),
        let state = stat[close...].dropFirst().first(where: { $0 != " " }),
        wanted(state)
      {
        return
      }
      usleep(1000)
    }
  }

  /// Kills the server and deletes its store.
  func remove() {
    thaw()
    kill()
    try? FileManager.default.removeItem(at: storeDirectory)
  }

  deinit { remove() }

  private func signal(_ number: Int32) {
    guard let process, process.isRunning else { return }
    Glibc.kill(process.processIdentifier, number)
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
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ServerError("socket failed") }
    defer { close(fd) }
    var address = loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound else { throw ServerError("bind failed") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  private static func accepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: UInt16(port))
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    return address
  }
}

struct ServerError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
