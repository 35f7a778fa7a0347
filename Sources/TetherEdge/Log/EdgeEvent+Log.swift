// SPDX-License-Identifier: Apache-2.0
import Logging

extension EdgeEvent {
  /// The event's name in the log: the line's message.
  public var logName: String {
    switch self {
    case .joined(_, _, let resumed): resumed ? "resume" : "join"
    case .left: "leave"
    case .kicked: "kick"
    case .loggedIn(_, let resumed): resumed ? "relogin" : "login"
    case .loggedOut: "logout"
    case .channelJoined: "login-join"
    case .channelLeft: "login-leave"
    case .userKicked: "kick-user"
    case .versionOneDropped: "v1-dropped"
    }
  }

  /// The line's level: `warning` for version 1 datagrams dropped (a device to update), `info`
  /// for the sessions' own events.
  public var logLevel: Logger.Level {
    if case .versionOneDropped = self { .warning } else { .info }
  }

  /// The event's fields: channel, uid, user, cause (why a session ended) and ban seconds;
  /// for version 1 datagrams dropped, how many since the last line and why.
  public var logFields: Logger.Metadata {
    switch self {
    case .joined(let channel, let uid, _):
      ["channel": "\(channel.text)", "uid": "\(uid)"]
    case .left(let channel, let uid, let cause):
      ["channel": "\(channel.text)", "uid": "\(uid)", "cause": "\(cause.logValue)"]
    case .kicked(let channel, let uid, let banSeconds):
      ["channel": "\(channel.text)", "uid": "\(uid)", "ban_seconds": "\(banSeconds)"]
    case .loggedIn(let user, _):
      ["user": "\(user.text)"]
    case .loggedOut(let user, let cause):
      ["user": "\(user.text)", "cause": "\(cause.logValue)"]
    case .channelJoined(let channel, let user), .channelLeft(let channel, let user):
      ["channel": "\(channel.text)", "user": "\(user.text)"]
    case .userKicked(let user, let banSeconds):
      ["user": "\(user.text)", "ban_seconds": "\(banSeconds)"]
    case .versionOneDropped(let count):
      ["dropped": "\(count)", "why": "\(Self.versionOneDroppedMessage)"]
    }
  }
}

extension EdgeEvent.LeaveCause {
  /// The cause as one word for a log field: `grace ended` is `grace-ended`.
  public var logValue: String { String(rawValue.map { $0 == " " ? "-" : $0 }) }
}

extension Logger {
  /// One line for an event, at its level (``EdgeEvent/logLevel``).
  public func log(_ event: EdgeEvent) {
    log(level: event.logLevel, "\(event.logName)", metadata: event.logFields)
  }
}
