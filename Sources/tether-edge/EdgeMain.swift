// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Glibc

/// The root command, and the exit-code convention: 0 success, 1 failure (the command ran
/// and did not succeed: bind failed, kick not done), 2 usage error (a bad option or value).
struct TetherEdge: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tether-edge",
    abstract: "The reference edge server of Tether.",
    subcommands: [Serve.self, TokenCommand.self, Kick.self, CertificateCommand.self])
}

enum EdgeMain {
  static func run() -> Never {
    do {
      var command = try TetherEdge.parseAsRoot()
      try command.run()
      exit(0)
    } catch {
      let code = TetherEdge.exitCode(for: error)
      let message = TetherEdge.fullMessage(for: error)
      if code == .success {
        print(message)
        exit(0)
      }
      if !message.isEmpty { printError(message) }
      exit(code == .validationFailure ? 2 : code.rawValue)
    }
  }
}

/// Writes one line to stderr (straight to the descriptor: no shared stdio state).
func printError(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
}

/// Prints `message` to stderr and fails with exit code 1.
func fail(_ message: String) -> ExitCode {
  printError("tether-edge: \(message)")
  return ExitCode.failure
}
