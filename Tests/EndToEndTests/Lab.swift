// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// Where the end-to-end tests find the programs under test: the staged install's
/// tether-edge and the C device example, both built by `make test` (which sets
/// TETHER_E2E_REQUIRED=1, so a missing binary fails instead of skipping).
enum Lab {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  static let edge =
    ProcessInfo.processInfo.environment["TETHER_EDGE_BIN"]
    ?? root.appendingPathComponent("build/install/bin/tether-edge").path
  static let device =
    ProcessInfo.processInfo.environment["TETHER_DEVICE_BIN"]
    ?? root.appendingPathComponent("build/examples/x86_64/device").path
  static let messaging =
    ProcessInfo.processInfo.environment["TETHER_MESSAGING_BIN"]
    ?? root.appendingPathComponent("build/examples/x86_64/messaging").path
  static let required = ProcessInfo.processInfo.environment["TETHER_E2E_REQUIRED"] == "1"
  /// The sanitizer `edge` was built with ("asan", "tsan"), as scripts/sanitize/check-swift.sh says
  /// when it runs the suites against its own sanitized build; nil for a plain build.
  static let edgeSanitizer = ProcessInfo.processInfo.environment["TETHER_EDGE_SANITIZER"]

  static var available: Bool {
    FileManager.default.isExecutableFile(atPath: edge)
      && FileManager.default.isExecutableFile(atPath: device)
      && FileManager.default.isExecutableFile(atPath: messaging)
  }

  /// Runs only when the binaries are there, or fails when make test asked for them.
  static var enabled: ConditionTrait {
    .enabled(if: available || required, "run `make test` to build tether-edge and the device")
  }

  static let channel = "lobby"

  /// A device joined to `edge` (directly, or through `relay` as device `index`).
  static func device(
    _ name: String, edge: EdgeProcess, relay: Relay? = nil, index: Int = 0, uid: UInt32,
    channel: String = channel, token: String? = nil, appID: String? = nil,
    expireSeconds: Int = 3600, scale: Double, extra: [String] = []
  ) throws -> DeviceProcess {
    let server = address(edge, relay, index)
    let token = try token ?? edge.token(channel: channel, uid: uid, expireSeconds: expireSeconds)
    return try DeviceProcess(
      binary: Lab.device, name: name, server: server, appID: appID ?? edge.appID,
      channel: channel, uid: uid, token: token, scale: scale, extra: extra)
  }
}

extension Lab {
  /// Where a host reaches `edge`: directly, or through `relay` as device `index`.
  static func address(_ edge: EdgeProcess, _ relay: Relay?, _ index: Int) -> String {
    relay.map { "127.0.0.1:\($0.port(of: index))" } ?? edge.address
  }

  /// A login host (examples/messaging) logged in to `edge` as `user` (directly, or through
  /// `relay` as device `index`), joining `channels` once logged in.
  static func messaging(
    _ name: String, edge: EdgeProcess, relay: Relay? = nil, index: Int = 0, user: String,
    channels: [String] = [channel], token: String? = nil, appID: String? = nil,
    expireSeconds: Int = 3600, scale: Double, binary: String = Lab.messaging,
    launcher: [String] = [], extra: [String] = []
  ) throws -> MessagingProcess {
    let server = address(edge, relay, index)
    let token = try token ?? edge.token(userID: user, expireSeconds: expireSeconds)
    return try MessagingProcess(
      binary: binary, name: name, server: server, appID: appID ?? edge.appID, userID: user,
      token: token, channels: channels, scale: scale, extra: extra, launcher: launcher)
  }
}

/// Shorthands for expectations on a C host's lines (the device or the messaging example).
extension HostProcess {
  /// The host reached `state`/`reason` within `timeout` seconds (after line `from`).
  func reaches(_ state: String, _ reason: String, from: Int = 0, timeout: Double = 10) -> Bool {
    waitForState(state, reason, from: from, timeout: timeout) != nil
  }

  /// RECONNECTING/INTERRUPTED, `threshold` seconds after the last answer `relay` passed to
  /// link `index` (read at the call: make it right after cutting the link), not sooner but
  /// for `early` (the clocks' rounding), and at most `late` after. Returns when that last
  /// answer passed.
  @discardableResult
  func expectInterrupted(
    _ threshold: Double, afterLastAnswerThrough relay: Relay, index: Int = 0, early: Double,
    late: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> Double {
    let lastAnswer = try #require(relay.lastAnswerToDevice(index), sourceLocation: sourceLocation)
    let interrupted = try #require(
      waitForState("RECONNECTING", "INTERRUPTED"), sourceLocation: sourceLocation)
    #expect(interrupted.time >= lastAnswer + threshold - early, sourceLocation: sourceLocation)
    #expect(interrupted.time <= lastAnswer + threshold + late, sourceLocation: sourceLocation)
    return lastAnswer
  }

  /// Every "state ..." line, in order, as "STATE REASON".
  var states: [String] {
    lines.compactMap { line in
      guard let range = line.text.range(of: " state ") else { return nil }
      return String(line.text[range.upperBound...])
    }
  }
}

/// The device example cross-built for an ARM board, run under qemu-user.
struct CrossDevice: Sendable, CustomStringConvertible {
  let arch: String
  let binary: String
  let launcher: [String]

  var description: String { arch }

  static let all: [CrossDevice] = [
    CrossDevice(
      arch: "aarch64",
      binary: ProcessInfo.processInfo.environment["TETHER_DEVICE_BIN_AARCH64"]
        ?? Lab.root.appendingPathComponent("build/examples/aarch64/device").path,
      launcher: ["/usr/bin/qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]),
    CrossDevice(
      arch: "armv7",
      binary: ProcessInfo.processInfo.environment["TETHER_DEVICE_BIN_ARMV7"]
        ?? Lab.root.appendingPathComponent("build/examples/armv7/device").path,
      launcher: ["/usr/bin/qemu-arm", "-L", "/usr/arm-linux-gnueabihf"]),
  ]

  /// examples/messaging built for the same architecture.
  var messaging: String {
    ProcessInfo.processInfo.environment["TETHER_MESSAGING_BIN_\(arch.uppercased())"]
      ?? Lab.root.appendingPathComponent("build/examples/\(arch)/messaging").path
  }

  var available: Bool {
    FileManager.default.isExecutableFile(atPath: binary)
      && FileManager.default.isExecutableFile(atPath: launcher[0])
  }
}
