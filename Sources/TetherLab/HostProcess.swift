// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A C host the lab runs (`examples/device`: ``DeviceProcess``; `examples/messaging`:
/// ``MessagingProcess``): its process and what both do with the lines it printed.
public protocol HostProcess: AnyObject {
  var process: ManagedProcess { get }
}

extension HostProcess {
  public var lines: [ManagedProcess.Line] { process.lines }

  /// Waits up to `timeout` seconds for a line containing `text` (after line `from`).
  public func waitFor(_ text: String, from: Int = 0, timeout: Double = 10) -> ManagedProcess.Line? {
    process.waitFor(text, from: from, timeout: timeout)
  }

  /// "state CONNECTED JOIN_SUCCESS", "state CONNECTED LOGIN_SUCCESS" and the like.
  public func waitForState(_ state: String, _ reason: String, from: Int = 0, timeout: Double = 10)
    -> ManagedProcess.Line?
  {
    waitFor("state \(state) \(reason)", from: from, timeout: timeout)
  }

  /// The first line containing `text` after line `from`, if it came.
  public func first(_ text: String, from: Int = 0) -> ManagedProcess.Line? {
    lines.dropFirst(from).first { $0.text.contains(text) }
  }

  public func signal(_ number: Int32) { process.signal(number) }
  public func stop() { process.stop() }

  /// SIGINT (the host leaves or logs out cleanly), then its exit status, if it exited
  /// within `timeout` seconds.
  func interrupt(timeout: Double) -> Int32? {
    process.signal(SIGINT)
    return process.waitExit(timeout: timeout)
  }
}

/// A device the channel demo drives: `examples/device` here (``DeviceProcess``) or in a
/// virtual machine (``GuestDevice``).
public protocol ChannelDevice: HostProcess {
  /// The device leaves the channel cleanly and exits (SIGINT, here or in the guest): its exit
  /// status here, 0 once the guest's driver acted, nil if nothing came within `timeout`.
  @discardableResult func leave(timeout: Double) -> Int32?
}
