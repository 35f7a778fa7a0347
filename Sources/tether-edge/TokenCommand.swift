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
    let expiry = TokenExpiry.after(expireSeconds, now: UInt64(max(time(nil), 0)))
    print(try versionTwoToken(expiresAt: expiry))
  }

  /// The protocol version 2 token of these options (docs/PROTOCOL.md §12.4), minted by the
  /// same library call Swift app servers use.
  func versionTwoToken(expiresAt expiry: UInt64) throws -> String {
    do {
      let minter = try TokenMinter(certificate: app.certificate)
      return minter.mint(appID: try app.appID, grant: try target.grant(), expiresAt: expiry)
    } catch let error as CertificateKeyError {
      throw fail("cannot make the certificate's keys: \(error)")
    }
  }
}
