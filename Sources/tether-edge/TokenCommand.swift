// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Glibc
import TetherCore
import TetherEdge

/// `tether-edge token`: prints one token, as an app server would hand it to a device.
struct TokenCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "token",
    abstract: "Print a token for a channel and uid, or for a login user id.",
    discussion: """
      Either --channel with --uid (uid 0: the token is good for any uid in the channel), or
      --user-id for a login session.
      """)

  @OptionGroup var app: AppOptions

  @OptionGroup var target: TargetOptions

  @Option(help: "Seconds from now until the token expires; 0: it never expires.")
  var expireSeconds: UInt64

  func run() throws {
    let now = UInt64(max(time(nil), 0))
    let (sum, overflow) = now.addingReportingOverflow(expireSeconds)
    let expiry = expireSeconds == 0 ? 0 : (overflow ? .max : sum)
    let signer = TokenSigner(appID: try app.appID, certificate: app.certificate)
    print(String(decoding: signer.sign(try target.grant(), expiresAt: expiry), as: UTF8.self))
  }
}
