// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// `tether-edge serve`'s protocol version 2 options, as an operator gives them: checked
/// with `--check-config` (no socket opened), a bad value a usage error (exit 2) naming the
/// option, and each listed in `--help`.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: Lab.edge) || Lab.required))
struct EdgeOptionTests {
  static let base = [
    "serve", "--listen", "127.0.0.1:0", "--app-id", "demo-app", "--app-certificate", "secret",
    "--check-config",
  ]

  /// Runs `tether-edge` with `arguments`; its exit status and stderr.
  static func run(_ arguments: [String]) throws -> (Int32?, [String], [String]) {
    let process = try ManagedProcess(
      name: "edge-options", executable: Lab.edge, arguments: arguments, collectErrors: true)
    let status = process.waitExit(timeout: 10)
    return (status, process.lines.map(\.text), process.errorLines.map(\.text))
  }

  @Test func validValues_checkOK() throws {
    let (status, out, _) = try Self.run(
      Self.base + [
        "--edge-id", "edge-1.example:7000", "--handshake-rate", "5", "--max-channel-members",
        "3", "--max-app-sessions", "20000",
      ])
    #expect(status == 0 && out == ["configuration ok"], "\(out)")
  }

  @Test(arguments: [
    (["--handshake-rate", "0"], "--handshake-rate must be 1 to 1000000000."),
    (["--handshake-rate", "1000000001"], "--handshake-rate must be 1 to 1000000000."),
    (["--max-channel-members", "0"], "--max-channel-members must be at least 1."),
    (["--max-app-sessions=-1"], "--max-app-sessions must be at least 1."),
    (
      ["--edge-id", "edge 1"], "--edge-id must be 1 to 255 bytes of printable ASCII without space."
    ),
    (["--edge-id", ""], "--edge-id must be 1 to 255 bytes of printable ASCII without space."),
  ])
  func aBadValue_isAUsageError_namingTheOption(extra: [String], message: String) throws {
    let (status, _, errors) = try Self.run(Self.base + extra)
    #expect(status == 2)
    #expect(errors.contains { $0.contains(message) }, "\(errors)")
  }

  /// Each option is in the help, and nothing there says devices still speak version 1
  /// (they did while the library moved; version 1 is gone, docs/PROTOCOL.md §12.14).
  @Test func help_listsEachOption_andSpeaksOfNoVersion1Devices() throws {
    let (status, out, _) = try Self.run(["serve", "--help"])
    #expect(status == 0)
    let help = out.joined(separator: " ").split(whereSeparator: \.isWhitespace).joined(
      separator: " ")
    let options = [
      "--edge-id", "--previous-app-certificate", "--handshake-rate", "--max-channel-members",
      "--max-app-sessions",
    ]
    for option in options {
      #expect(help.contains(option), "\(option)")
    }
    #expect(!help.contains("still speak v1"))
    #expect(!help.contains("applies to v2 sessions"))
  }
}
