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

  @Option(help: "The channel the token is for.")
  var channel: String?

  @Option(help: "The uid the token is for; 0 means any uid.")
  var uid: UInt32?

  @Option(help: "The login user id the token is for (instead of --channel and --uid).")
  var userID: String?

  @Option(help: "Seconds from now until the token expires; 0: it never expires.")
  var expireSeconds: UInt64

  func validate() throws { _ = try grant() }

  func run() throws {
    let now = UInt64(max(time(nil), 0))
    let (sum, overflow) = now.addingReportingOverflow(expireSeconds)
    let expiry = expireSeconds == 0 ? 0 : (overflow ? .max : sum)
    let signer = TokenSigner(appID: try app.appID, certificate: app.certificate)
    print(String(decoding: signer.sign(try grant(), expiresAt: expiry), as: UTF8.self))
  }

  private func grant() throws -> TokenGrant {
    switch (channel, uid, userID) {
    case (let channel?, let uid?, nil):
      return .channel(try channelName(channel), uid: uid)
    case (nil, nil, let userID?):
      return .user(try loginUserID(userID))
    default:
      throw ValidationError("Give either --channel and --uid, or --user-id.")
    }
  }
}
