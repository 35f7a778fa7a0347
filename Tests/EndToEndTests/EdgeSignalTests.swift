import Foundation
import Testing
import TetherLab

/// `tether-edge serve` as an operator runs it: its log on stderr (one line per session
/// event), and a clean stop on SIGTERM or SIGINT (the final `stopped` line, exit status 0).
@Suite(.serialized, Lab.enabled) struct EdgeSignalTests {
  /// The installed binary with stdout and stderr in files, read as it runs.
  final class Served {
    let process = Process()
    let directory: URL
    let port: UInt16

    init() throws {
      directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tether-edge-signal-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      for name in ["out", "err"] {
        FileManager.default.createFile(
          atPath: directory.appendingPathComponent(name).path, contents: nil)
      }
      process.executableURL = URL(fileURLWithPath: Lab.edge)
      process.arguments = [
        "serve", "--listen", "127.0.0.1:0", "--app-id", "demo-app", "--app-certificate",
        "demo-certificate",
      ]
      process.standardOutput = try FileHandle(
        forWritingTo: directory.appendingPathComponent("out"))
      process.standardError = try FileHandle(
        forWritingTo: directory.appendingPathComponent("err"))
      try process.run()
      var bound: UInt16?
      for _ in 0..<500 where bound == nil {
        bound = Self.lines(directory.appendingPathComponent("out"))
          .first { $0.hasPrefix("listening on ") }?
          .split(separator: ":").last.flatMap { UInt16($0) }
        if bound == nil { usleep(20_000) }
      }
      guard let bound else {
        process.terminate()
        throw LabError("tether-edge did not print its listening line")
      }
      port = bound
    }

    deinit {
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
      try? FileManager.default.removeItem(at: directory)
    }

    static func lines(_ file: URL) -> [String] {
      guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
      return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    var log: [String] { Self.lines(directory.appendingPathComponent("err")) }

    /// The first log line containing `text` within `timeout` seconds.
    func waitForLog(_ text: String, timeout: Double) -> String? {
      let end = Date().addingTimeInterval(timeout)
      repeat {
        if let line = log.first(where: { $0.contains(text) }) { return line }
        usleep(20_000)
      } while Date() < end
      return nil
    }

    /// The exit status within `timeout` seconds, or nil.
    func waitExit(timeout: Double) -> Int32? {
      let end = Date().addingTimeInterval(timeout)
      while process.isRunning && Date() < end { usleep(10_000) }
      if process.isRunning { return nil }
      process.waitUntilExit()
      return process.terminationStatus
    }
  }

  @Test func sigterm_withAMemberJoined_logsTheJoin_thenStopsCleanly() throws {
    let edge = try Served()
    #expect(edge.waitForLog(" notice listening address=127.0.0.1:\(edge.port)", timeout: 5) != nil)
    let tokenProcess = try ManagedProcess(
      name: "token", executable: Lab.edge,
      arguments: [
        "token", "--app-id", "demo-app", "--app-certificate", "demo-certificate", "--channel",
        Lab.channel, "--uid", "7", "--expire-seconds", "3600",
      ])
    #expect(tokenProcess.waitExit(timeout: 10) == 0)
    usleep(20_000)
    let token = try #require(tokenProcess.lines.first?.text)
    let device = try DeviceProcess(
      binary: Lab.device, name: "D7", server: "127.0.0.1:\(edge.port)", appID: "demo-app",
      channel: Lab.channel, uid: 7, token: token, scale: 1)
    defer { device.stop() }
    #expect(device.reaches("CONNECTED", "JOIN_SUCCESS"))
    let join = try #require(edge.waitForLog(" info join ", timeout: 5))
    #expect(join.hasSuffix(" info join channel=lobby uid=7"))

    kill(edge.process.processIdentifier, SIGTERM)
    #expect(edge.waitExit(timeout: 10) == 0)
    let last = try #require(edge.log.last)
    #expect(last.hasSuffix(" notice stopped logins=0 sessions=1 signal=SIGTERM"), "\(last)")
  }

  @Test func sigint_stopsCleanly_too() throws {
    let edge = try Served()
    kill(edge.process.processIdentifier, SIGINT)
    #expect(edge.waitExit(timeout: 10) == 0)
    let last = try #require(edge.log.last)
    #expect(last.hasSuffix(" notice stopped logins=0 sessions=0 signal=SIGINT"), "\(last)")
  }
}
