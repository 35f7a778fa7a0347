import Foundation

/// A running `examples/messaging` (the C host of the login session), with the lines it
/// printed.
public final class MessagingProcess: @unchecked Sendable {
  public let process: ManagedProcess
  public let name: String

  public init(
    binary: String, name: String, server: String, appID: String, userID: String, token: String,
    channels: [String], scale: Double, extra: [String] = [], launcher: [String] = []
  ) throws {
    self.name = name
    var arguments = [
      "--server", server, "--app-id", appID, "--user-id", userID, "--token", token,
      "--scale", String(scale),
    ]
    for channel in channels { arguments += ["--channel", channel] }
    process = try ManagedProcess(
      name: name, executable: binary, arguments: arguments + extra, launcher: launcher)
  }

  public var lines: [ManagedProcess.Line] { process.lines }

  /// Waits up to `timeout` seconds for a line containing `text` (after line `from`).
  public func waitFor(_ text: String, from: Int = 0, timeout: Double = 10) -> ManagedProcess.Line? {
    process.waitFor(text, from: from, timeout: timeout)
  }

  /// "state CONNECTED LOGIN_SUCCESS" and the like.
  public func waitForState(_ state: String, _ reason: String, from: Int = 0, timeout: Double = 10)
    -> ManagedProcess.Line?
  {
    waitFor("state \(state) \(reason)", from: from, timeout: timeout)
  }

  /// The first line containing `text` after line `from`, if it came.
  public func first(_ text: String, from: Int = 0) -> ManagedProcess.Line? {
    lines.dropFirst(from).first { $0.text.contains(text) }
  }

  /// SIGINT: the host logs out cleanly and exits.
  public func logout(timeout: Double = 5) -> Int32? {
    process.signal(SIGINT)
    return process.waitExit(timeout: timeout)
  }

  public func signal(_ number: Int32) { process.signal(number) }
  public func stop() { process.stop() }
}
