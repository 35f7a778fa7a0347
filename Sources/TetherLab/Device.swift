import Foundation

/// A running `examples/device` (the C host), with the lines it printed.
public final class DeviceProcess: @unchecked Sendable {
  public let process: ManagedProcess
  public let name: String

  public init(
    binary: String, name: String, server: String, appID: String, channel: String, uid: UInt32,
    token: String?, scale: Double, extra: [String] = [], launcher: [String] = []
  ) throws {
    self.name = name
    var arguments = [
      "--server", server, "--app-id", appID, "--channel", channel, "--uid", String(uid),
      "--scale", String(scale),
    ]
    if let token { arguments += ["--token", token] }
    process = try ManagedProcess(
      name: name, executable: binary, arguments: arguments + extra, launcher: launcher)
  }

  public var lines: [ManagedProcess.Line] { process.lines }

  /// Waits up to `timeout` seconds for a line containing `text` (after line `from`).
  public func waitFor(_ text: String, from: Int = 0, timeout: Double = 10) -> ManagedProcess.Line? {
    process.waitFor(text, from: from, timeout: timeout)
  }

  /// "state CONNECTED JOIN_SUCCESS" and the like.
  public func waitForState(_ state: String, _ reason: String, from: Int = 0, timeout: Double = 10)
    -> ManagedProcess.Line?
  {
    waitFor("state \(state) \(reason)", from: from, timeout: timeout)
  }

  public func first(_ text: String) -> ManagedProcess.Line? {
    lines.first { $0.text.contains(text) }
  }

  /// SIGINT: the device leaves the channel cleanly and exits.
  public func leave(timeout: Double = 5) -> Int32? {
    process.signal(SIGINT)
    return process.waitExit(timeout: timeout)
  }

  public func signal(_ number: Int32) { process.signal(number) }
  public func stop() { process.stop() }
}
