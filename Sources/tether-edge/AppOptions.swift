// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import TetherCore
import TetherEdge

/// The app id and certificate every subcommand needs.
struct AppOptions: ParsableArguments {
  @Option(name: .customLong("app-id"), help: "The app id (1-64 printable ASCII, no space).")
  var appIDText: String

  @Option(help: "The app certificate: the key of every token and admin request.")
  var appCertificate: String

  var appID: AppID {
    get throws { try Self.appID(appIDText) }
  }

  var certificate: [UInt8] { Array(appCertificate.utf8) }

  func validate() throws {
    _ = try Self.appID(appIDText)
    guard !appCertificate.isEmpty else {
      throw ValidationError("--app-certificate must not be empty.")
    }
  }

  private static func appID(_ text: String) throws -> AppID {
    do {
      return try AppID(validating: Array(text.utf8))
    } catch {
      throw ValidationError("--app-id must be 1 to 64 bytes of printable ASCII without space.")
    }
  }
}

/// Whom a command is about: a channel member (--channel and --uid) or a login user
/// (--user-id).
struct TargetOptions: ParsableArguments {
  @Option(help: "The channel (with --uid).")
  var channel: String?

  @Option(help: "The uid in that channel; in a token, 0 means any uid.")
  var uid: UInt32?

  @Option(help: "The login user id (instead of --channel and --uid).")
  var userID: String?

  func validate() throws { _ = try grant() }

  /// The target as a token's grant: a (channel, uid) or a user id.
  func grant() throws -> TokenGrant {
    switch (channel, uid, userID) {
    case (let channel?, let uid?, nil):
      do {
        return .channel(try ChannelName(validating: Array(channel.utf8)), uid: uid)
      } catch {
        throw ValidationError(
          "--channel must be 1 to 63 bytes of a-z A-Z 0-9, space and !#$%&()+-:;<=.>?@[]^_{}|~,")
      }
    case (nil, nil, let userID?):
      do {
        return .user(try UserID(validating: Array(userID.utf8)))
      } catch {
        throw ValidationError("--user-id must be 1 to 64 bytes of printable ASCII without space.")
      }
    default:
      throw ValidationError("Give either --channel and --uid, or --user-id.")
    }
  }
}
