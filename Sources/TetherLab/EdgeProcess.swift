import Foundation

/// A running `tether-edge serve` on 127.0.0.1, with the commands an app server and an
/// administrator would use against it.
public final class EdgeProcess: @unchecked Sendable {
  public let binary: String
  public let appID: String
  public let certificate: String
  public let timeScale: Double
  public let extraArguments: [String]
  public let launcher: [String]
  public private(set) var port: UInt16 = 0
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
  public var pid: Int32? { server?.pid }

  public func start(port: UInt16) throws {
    let server = try ManagedProcess(
      name: "edge", executable: binary,
      arguments: [
        "serve", "--listen", "127.0.0.1:\(port)", "--app-id", appID, "--app-certificate",
        certificate, "--time-scale", String(timeScale),
      ] + extraArguments, launcher: launcher)
    guard let line = server.waitFor("listening on", timeout: 10),
      let text = line.text.split(separator: ":").last, let bound = UInt16(text)
    else { throw LabError("tether-edge did not start") }
    self.port = bound
    self.server = server
  }

  /// Stops the server (SIGTERM) and waits for it.
  public func stop() {
    server?.signal(SIGTERM)
    _ = server?.waitExit(timeout: 5)
    server?.stop()
    server = nil
  }

  /// Kills the server (SIGKILL: no goodbye, no cleanup) and waits for it.
  public func kill() {
    server?.signal(SIGKILL)
    _ = server?.waitExit(timeout: 5)
    server = nil
  }

  /// A token for `channel` and `uid`, valid `seconds` from now.
  public func token(channel: String, uid: UInt32, expireSeconds seconds: Int) throws -> String {
    let output = try run([
      "token", "--app-id", appID, "--app-certificate", certificate, "--channel", channel,
      "--uid", String(uid), "--expire-seconds", String(seconds),
    ])
    guard output.status == 0, let token = output.lines.first else {
      throw LabError("tether-edge token failed")
    }
    return token
  }

  /// A login token for `userID`, valid `seconds` from now.
  public func token(userID: String, expireSeconds seconds: Int) throws -> String {
    let output = try run([
      "token", "--app-id", appID, "--app-certificate", certificate, "--user-id", userID,
      "--expire-seconds", String(seconds),
    ])
    guard output.status == 0, let token = output.lines.first else {
      throw LabError("tether-edge token --user-id failed")
    }
    return token
  }

  /// `tether-edge kick --user-id`: its exit status.
  public func kick(userID: String, banSeconds: Int = 0) throws -> Int32 {
    try run([
      "kick", "--server", address, "--app-id", appID, "--app-certificate", certificate,
      "--user-id", userID, "--ban-seconds", String(banSeconds),
    ]).status
  }

  /// `tether-edge kick`: its exit status.
  public func kick(channel: String, uid: UInt32, banSeconds: Int = 0) throws -> Int32 {
    try run([
      "kick", "--server", address, "--app-id", appID, "--app-certificate", certificate,
      "--channel", channel, "--uid", String(uid), "--ban-seconds", String(banSeconds),
    ]).status
  }

  private func run(_ arguments: [String]) throws -> (status: Int32, lines: [String]) {
    let process = try ManagedProcess(name: "edge-cmd", executable: binary, arguments: arguments)
    guard let status = process.waitExit(timeout: 10) else {
      throw LabError("tether-edge \(arguments[0]) did not finish")
    }
    usleep(20_000)  // let the pipe deliver the last line
    return (status, process.lines.map(\.text))
  }
}
