import ArgumentParser
import TetherCore

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

/// A channel name option's value, checked as the client checks it.
func channelName(_ text: String) throws -> ChannelName {
  do {
    return try ChannelName(validating: Array(text.utf8))
  } catch {
    throw ValidationError(
      "--channel must be 1 to 63 bytes of a-z A-Z 0-9, space and !#$%&()+-:;<=.>?@[]^_{}|~,")
  }
}

/// A login user id option's value, checked as the client checks it.
func loginUserID(_ text: String) throws -> UserID {
  do {
    return try UserID(validating: Array(text.utf8))
  } catch {
    throw ValidationError("--user-id must be 1 to 64 bytes of printable ASCII without space.")
  }
}
