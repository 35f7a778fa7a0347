// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A running `examples/device` (the C host), with the lines it printed.
public final class DeviceProcess: ChannelDevice, @unchecked Sendable {
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

  /// SIGINT: the device leaves the channel cleanly and exits.
  @discardableResult
  public func leave(timeout: Double = 5) -> Int32? { interrupt(timeout: timeout) }
}
