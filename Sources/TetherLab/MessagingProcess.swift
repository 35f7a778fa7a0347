// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A running `examples/messaging` (the C host of the login session), with the lines it
/// printed.
public final class MessagingProcess: HostProcess, @unchecked Sendable {
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

  /// SIGINT: the host logs out cleanly and exits.
  public func logout(timeout: Double = 5) -> Int32? { interrupt(timeout: timeout) }
}
