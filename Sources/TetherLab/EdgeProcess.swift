// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A running `tether-edge serve` on 127.0.0.1, with what it printed (stdout: its
/// "listening on" line, and with `--print-counters` its counters after a stop; stderr: its
/// log, one line a record) and the commands an app server and an administrator would use
/// against it.
public final class EdgeProcess: @unchecked Sendable {
  public let binary: String
  public let appID: String
  public let certificate: String
  public let timeScale: Double
  public let extraArguments: [String]
  public let launcher: [String]
  public private(set) var port: UInt16 = 0
  /// The server of the present run, or of the last one once stopped (its lines stay).
  private var server: ManagedProcess?

  /// Starts the server (port 0 picks one) and waits for its "listening on" line.
  public init(
    binary: String, appID: String = "demo-app", certificate: String = "demo-certificate",
    timeScale: Double, port: UInt16 = 0, extraArguments: [String] = [], launcher: [String] = []
  ) throws {
    self.extraArguments = extraArguments
    self.launcher = launcher
    self.binary = binary
    self.appID = appID
    self.certificate = certificate
    self.timeScale = timeScale
    try start(port: port)
  }

  deinit { stop() }

  public var address: String { "127.0.0.1:\(port)" }

  /// The server's process id, while it runs.
  public var pid: Int32? { server?.isRunning == true ? server?.pid : nil }

  /// What the server printed on stdout, in this run or the last.
  public var output: [String] { server?.lines.map(\.text) ?? [] }

  /// The server's log (stderr), in this run or the last.
  public var log: [String] { server?.errorLines.map(\.text) ?? [] }

  /// The first log line containing `text`, waiting up to `timeout` seconds.
  public func waitForLog(_ text: String, timeout: Double) -> String? {
    server?.waitFor(text, errors: true, timeout: timeout)?.text
  }

  public func start(port: UInt16) throws {
    let server = try ManagedProcess(
      name: "edge", executable: binary,
      arguments: [
        "serve", "--listen", "127.0.0.1:\(port)", "--app-id", appID, "--app-certificate",
        certificate, "--time-scale", String(timeScale),
      ] + extraArguments, launcher: launcher, collectErrors: true)
    guard let line = server.waitFor("listening on", timeout: 10),
      let text = line.text.split(separator: ":").last, let bound = UInt16(text)
    else { throw LabError("tether-edge did not start") }
    self.port = bound
    self.server = server
  }

  /// Stops the server (`signal`: SIGTERM or SIGINT, a clean stop) and waits for it: its
  /// exit status, or nil if it was not running or did not exit within `timeout` seconds
  /// (then it is killed).
  @discardableResult public func stop(signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32? {
    guard let server, server.isRunning else { return nil }
    server.signal(signal)
    let status = server.waitExit(timeout: timeout)
    server.stop()
    return status
  }

  /// Kills the server (SIGKILL: no goodbye, no cleanup) and waits for it.
  public func kill() {
    server?.signal(SIGKILL)
    _ = server?.waitExit(timeout: 5)
  }

  /// A token for `channel` and `uid`, valid `seconds` from now.
  public func token(channel: String, uid: UInt32, expireSeconds seconds: Int) throws -> String {
    try token(for: ["--channel", channel, "--uid", String(uid)], expireSeconds: seconds)
  }

  /// A login token for `userID`, valid `seconds` from now.
  public func token(userID: String, expireSeconds seconds: Int) throws -> String {
    try token(for: ["--user-id", userID], expireSeconds: seconds)
  }

  /// `tether-edge kick --user-id`: its exit status and what it printed.
  public func kick(userID: String, banSeconds: Int = 0) throws -> (status: Int32, lines: [String]) {
    try kick(["--user-id", userID], banSeconds: banSeconds)
  }

  /// `tether-edge kick`: its exit status and what it printed.
  public func kick(
    channel: String, uid: UInt32, banSeconds: Int = 0
  ) throws -> (status: Int32, lines: [String]) {
    try kick(["--channel", channel, "--uid", String(uid)], banSeconds: banSeconds)
  }

  private func token(for subject: [String], expireSeconds seconds: Int) throws -> String {
    let output = try run(
      ["token", "--app-id", appID, "--app-certificate", certificate] + subject + [
        "--expire-seconds", String(seconds),
      ])
    guard output.status == 0, let token = output.lines.first else {
      throw LabError("tether-edge token \(subject.joined(separator: " ")) failed")
    }
    return token
  }

  private func kick(_ subject: [String], banSeconds: Int) throws -> (status: Int32, lines: [String])
  {
    try run(
      ["kick", "--server", address, "--app-id", appID, "--app-certificate", certificate]
        + subject + ["--ban-seconds", String(banSeconds)])
  }

  private func run(_ arguments: [String]) throws -> (status: Int32, lines: [String]) {
    let process = try ManagedProcess(name: "edge-cmd", executable: binary, arguments: arguments)
    guard let status = process.waitExit(timeout: 10) else {
      throw LabError("tether-edge \(arguments[0]) did not finish")
    }
    return (status, process.lines.map(\.text))
  }
}
