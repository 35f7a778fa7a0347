// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Glibc
import TetherCore
import TetherEdge

/// `tether-edge kick`: one signed admin datagram to a running server.
struct Kick: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Kick (and optionally ban) a channel member or a logged-in user on a running server.",
    discussion: """
      Either --channel with --uid (a channel session), or --user-id (a login session).
      Prints the server's answer: `kicked`, `no such member` or `refused`. Exit code 0 only
      for `kicked`; 1 for any other answer or none within 1 s.
      """)

  @Option(help: "The server: A.B.C.D:PORT or [IPv6]:PORT.")
  var server: String

  @OptionGroup var app: AppOptions

  @OptionGroup var target: TargetOptions

  @Option(
    help:
      "Refuse the uid in the channel, or the user id's logins, this many seconds more (0: kick only)."
  )
  var banSeconds: UInt32 = 0

  func validate() throws { _ = try address() }

  func run() throws {
    let datagram = try datagram(
      unixTime: UInt64(max(time(nil), 0)), nonce: UInt64.random(in: .min ... .max))
    let status: AdminStatus?
    do {
      status = try AdminClient.send(datagram, to: try address(), timeoutMs: 1000)
    } catch let error as SystemError {
      throw fail("\(error)")
    }
    guard let status else { throw fail("no answer from \(server) within 1 s") }
    print(status.text)
    if status != .kicked { throw ExitCode.failure }
  }

  /// The signed request: KICK for --channel and --uid, KICK_USER for --user-id.
  private func datagram(unixTime: UInt64, nonce: UInt64) throws -> [UInt8] {
    switch try target.grant() {
    case .channel(let channel, let uid):
      return AdminKick(
        channel: channel, uid: uid, banSeconds: banSeconds, unixTime: unixTime, nonce: nonce
      ).sealed(appID: try app.appID, certificate: app.certificate)
    case .user(let userID):
      return AdminKickUser(userID: userID, banSeconds: banSeconds, unixTime: unixTime, nonce: nonce)
        .sealed(appID: try app.appID, certificate: app.certificate)
    }
  }

  private func address() throws -> SocketAddress {
    do {
      return try SocketAddress(parsing: server)
    } catch {
      throw ValidationError("--server must be A.B.C.D:PORT or [IPv6]:PORT (got '\(server)').")
    }
  }
}
