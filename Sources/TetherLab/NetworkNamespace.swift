// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A network namespace of the test's own (`ip netns`), with its loopback up, removed when
/// the object goes away. Traffic inside it never leaves it.
public final class NetworkNamespace: @unchecked Sendable {
  public static let ip =
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    } ?? "/usr/sbin/ip"

  /// Whether namespaces can be made here (root, and iproute2 installed).
  public static var available: Bool {
    getuid() == 0 && FileManager.default.isExecutableFile(atPath: ip)
  }

  public let name: String

  /// What runs a program inside the namespace.
  public var launcher: [String] { [Self.ip, "netns", "exec", name] }

  public init() throws {
    name = "tether-lab-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try run(["netns", "add", name])
    try run(["netns", "exec", name, Self.ip, "link", "set", "lo", "up"])
  }

  deinit { try? run(["netns", "del", name]) }

  /// Adds an address to the namespace's loopback (an RTM_NEWADDR for whoever listens).
  public func addLoopbackAddress(_ cidr: String) throws {
    try run(["netns", "exec", name, Self.ip, "addr", "add", cidr, "dev", "lo"])
  }

  /// Makes the route to 127.0.0.1 leave from `source` (an address the namespace holds):
  /// what a device sees when its route to the server changes source address.
  public func setLoopbackSource(_ source: String) throws {
    try run([
      "netns", "exec", name, Self.ip, "route", "replace", "local", "127.0.0.1", "dev", "lo",
      "table", "local", "proto", "kernel", "scope", "host", "src", source,
    ])
  }

  private func run(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Self.ip)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw LabError("ip \(arguments.joined(separator: " ")) failed")
    }
  }
}
