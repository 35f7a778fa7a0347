import TetherCore

/// Something the server did that an operator may want in a log (`serve --verbose`).
public enum EdgeEvent: Equatable, Sendable {
  case joined(channel: ChannelName, uid: UInt32, resumed: Bool)
  case left(channel: ChannelName, uid: UInt32, cause: LeaveCause)
  case kicked(channel: ChannelName, uid: UInt32, banSeconds: UInt32)

  public enum LeaveCause: String, Sendable {
    /// The client sent LEAVE.
    case quit
    /// Silent for forget-after.
    case forgotten
    /// Its token expired while joined, or a rejoin's token was refused.
    case tokenExpired = "token expired"
    case tokenInvalid = "token invalid"
    /// Another session took its uid (KICK SAME_UID).
    case replaced
    /// The same cookie came back for another channel or uid.
    case rejoinedElsewhere = "rejoined elsewhere"
  }
}

extension EdgeEvent: CustomStringConvertible {
  /// One log line, e.g. `join lobby uid 1000000`.
  public var description: String {
    switch self {
    case .joined(let channel, let uid, let resumed):
      "\(resumed ? "resume" : "join") \(channel.text) uid \(uid)"
    case .left(let channel, let uid, let cause):
      "leave \(channel.text) uid \(uid) (\(cause.rawValue))"
    case .kicked(let channel, let uid, let banSeconds):
      "kick \(channel.text) uid \(uid)" + (banSeconds > 0 ? " ban \(banSeconds) s" : "")
    }
  }
}

/// What the server set aside without acting on it.
public struct EdgeCounters: Equatable, Sendable {
  /// Datagrams that did not decode (client protocol or admin).
  public var malformed: UInt64 = 0
  /// Well-formed packets of a server → client type.
  public var unexpected: UInt64 = 0
  /// HEARTBEAT, RENEW_TOKEN or LEAVE under a cookie the server does not hold.
  public var unknownSession: UInt64 = 0
  /// JOINs answered with REFUSE or KICK.
  public var refusedJoins: UInt64 = 0
  /// Admin datagrams refused (bad MAC, wrong app, out of the time window, replayed).
  public var adminRefused: UInt64 = 0
  /// KICK or TOKEN_EXPIRED sent again to a datagram under a cookie they had ended.
  public var noticesRepeated: UInt64 = 0
  /// JOINs dropped unanswered: their source address was past its ``JoinLimit``.
  public var joinsLimited: UInt64 = 0
  /// HEARTBEAT, RENEW_TOKEN or LEAVE under a held cookie but from another address than the
  /// session's: treated as for an unknown cookie (also counted in ``unknownSession``).
  public var wrongAddress: UInt64 = 0
}

extension ChannelName {
  /// The name as text (it is ASCII).
  var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// How many entries each of the server's tables holds (``EdgeServer/tableCounts``). Each is
/// bounded: sessions, ended sessions and departures by ``EdgeConfig/maxSessions``, admin
/// nonces by 4,096, join sources by ``JoinLimit/maxSources``; bans by `maxSessions` too.
public struct EdgeTableCounts: Equatable, Sendable, CustomStringConvertible {
  public var sessions: Int
  public var endedSessions: Int
  public var departures: Int
  public var bans: Int
  public var adminNonces: Int
  public var joinSources: Int

  public var description: String {
    "sessions \(sessions) ended \(endedSessions) departures \(departures) bans \(bans)"
      + " nonces \(adminNonces) join-sources \(joinSources)"
  }
}
