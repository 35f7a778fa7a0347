// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Something the server did that an operator may want in a log (`serve --log-level info`: one line each).
public enum EdgeEvent: Equatable, Sendable {
  case joined(channel: ChannelName, uid: UInt32, resumed: Bool)
  case left(channel: ChannelName, uid: UInt32, cause: LeaveCause)
  case kicked(channel: ChannelName, uid: UInt32, banSeconds: UInt32)
  /// A login session began (`resumed` false) or was resumed by a LOGIN within its grace.
  case loggedIn(user: UserID, resumed: Bool)
  /// A login session ended; its channels' other members got *left* events.
  case loggedOut(user: UserID, cause: LeaveCause)
  /// A login session joined or left a login channel (a CHANNEL_OPERATION applied).
  case channelJoined(channel: ChannelName, user: UserID)
  case channelLeft(channel: ChannelName, user: UserID)
  /// The admin kicked a user's login session (KICK_USER).
  case userKicked(user: UserID, banSeconds: UInt32)
  /// Version 1 datagrams were dropped: `count` since the last such event (this one's
  /// included). Recorded at most once per 10 s (``VersionOneDrops``).
  case versionOneDropped(count: UInt64)

  public enum LeaveCause: String, Sendable {
    /// The client sent LEAVE (LOGOUT for a login session).
    case quit
    /// Silent for forget-after.
    case forgotten
    /// A login session silent for its whole online grace.
    case graceEnded = "grace ended"
    /// Another login of the same user id took over (KICK REMOTE_LOGIN).
    case remoteLogin = "remote login"
    /// More member events waited for its client than the queue holds.
    case eventQueueFull = "event queue full"
    /// Its token expired while joined, or a rejoin's token was refused.
    case tokenExpired = "token expired"
    case tokenInvalid = "token invalid"
    /// Another session took its uid (KICK SAME_UID).
    case replaced
    /// The same cookie came back for another channel or uid (or another user id).
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
    case .loggedIn(let user, let resumed):
      "\(resumed ? "relogin" : "login") \(user.text)"
    case .loggedOut(let user, let cause):
      "logout \(user.text) (\(cause.rawValue))"
    case .channelJoined(let channel, let user):
      "login-join \(channel.text) user \(user.text)"
    case .channelLeft(let channel, let user):
      "login-leave \(channel.text) user \(user.text)"
    case .userKicked(let user, let banSeconds):
      "kick user \(user.text)" + (banSeconds > 0 ? " ban \(banSeconds) s" : "")
    case .versionOneDropped(let count):
      "\(Self.versionOneDroppedMessage) (\(count) since the last line)"
    }
  }
}

extension EdgeEvent {
  /// Why a version 1 datagram got nothing: the log line's message.
  public static var versionOneDroppedMessage: String {
    "protocol version 1 datagram dropped: devices must speak version 2"
  }
}

/// What the server set aside without acting on it; and, for version 2, a few things it did
/// (handshakes answered, path challenges, migrations).
public struct EdgeCounters: Equatable, Sendable {
  /// Datagrams that did not decode (client protocol or admin).
  public var malformed: UInt64 = 0
  /// Well-formed datagrams of a kind the edge sends (RESPONSE, COOKIE_REPLY, REFUSE_CLEAR,
  /// REFUSE_SEALED, RESET), and DATA payloads that stand for no device message.
  public var unexpected: UInt64 = 0
  /// A DATA datagram naming a session id the edge holds no keys of; a HEARTBEAT, RENEW_TOKEN
  /// or LEAVE (LOGIN_HEARTBEAT, CHANNEL_OPERATION or LOGOUT) one opened to whose session the
  /// edge no longer holds (an ended session's, whose keys stay while its notice repeats).
  public var unknownSession: UInt64 = 0
  /// CONFIRMs answered with a sealed REFUSE (INITs refused: ``refusedHandshakes``).
  public var refusedJoins: UInt64 = 0
  /// Admin datagrams refused (bad MAC, wrong app, out of the time window, replayed).
  public var adminRefused: UInt64 = 0
  /// KICK or TOKEN_EXPIRED sent again to a datagram under a cookie they had ended.
  public var noticesRepeated: UInt64 = 0
  /// Channel INITs or CONFIRMs dropped unanswered, or login CONFIRMs refused with REJECTED:
  /// their source address was past its ``JoinLimit``.
  public var joinsLimited: UInt64 = 0
  /// A CONFIRM from another address than its ticket's, or a DATA datagram that
  /// opened from another address than that of a session the edge ended and still repeats
  /// its notice to (an ended session does not roam; a held one does: ``pathChallenges``).
  public var wrongAddress: UInt64 = 0
  /// Login CONFIRMs answered with a sealed LOGIN_REFUSE.
  public var refusedLogins: UInt64 = 0
  /// RELOGINs answered with KICK REMOTE_LOGIN because their user had logged in elsewhere
  /// while they were away past the grace.
  public var reloginsRefusedForNewerLogin: UInt64 = 0
  /// CHANNEL_OPERATIONs acknowledged but not applied because their sequence was not the next
  /// one (a repeat, or one that overtook an earlier one).
  public var channelOperationsUnordered: UInt64 = 0
  /// JOIN operations acknowledged but not applied: the session was in
  /// ``SessionTable/maximumChannels`` channels already.
  public var channelOperationsOverLimit: UInt64 = 0
  /// MEMBER_EVENTS sent again in answer to a LOGIN_HEARTBEAT that had not taken them all.
  public var memberEventsResent: UInt64 = 0
  /// LOGIN_HEARTBEATs and CHANNEL_OPERATIONs naming another server session than the one
  /// held under their cookie: nothing applied, taken or confirmed (answered SESSION_UNKNOWN
  /// while the session held is not confirmed yet).
  public var otherServerSession: UInt64 = 0
  /// Login sessions ended because more member events waited for their client than
  /// ``MemberEventQueue/capacity``.
  public var eventQueueOverflows: UInt64 = 0

  // Protocol version 2 (docs/PROTOCOL.md §12)

  /// Version 2 datagrams that did not open: a DATA tag, an INIT's token or request, a
  /// CONFIRM's ticket or tag (altered, forged, or made with other keys).
  public var unopened: UInt64 = 0
  /// DATA datagrams dropped before opening: a counter repeated or too old for the window.
  public var replayed: UInt64 = 0
  /// INITs answered with a COOKIE_REPLY (the edge was under load, §12.6).
  public var cookieReplies: UInt64 = 0
  /// INITs answered with REFUSE_CLEAR or REFUSE_SEALED.
  public var refusedHandshakes: UInt64 = 0
  /// CONFIRMs whose ticket had expired or was of another start of the edge.
  public var staleTickets: UInt64 = 0
  /// CONFIRMs of a consumed ticket whose session is not held at their address: nothing made.
  public var confirmsReplayed: UInt64 = 0
  /// RESETs sent (§12.9).
  public var resets: UInt64 = 0
  /// INITs answered with a RESPONSE (a ticket issued; the CONFIRM may never come).
  public var handshakesAnswered: UInt64 = 0
  /// DATA datagrams dropped that neither failed to open nor repeated: a size out of range,
  /// a session id the edge holds no keys of, a payload that is no device payload, an
  /// ended session's datagram from elsewhere, a PATH_RESPONSE that validated nothing (each
  /// also counted where its cause is: ``malformed``, ``unknownSession``, ``wrongAddress``).
  public var dataDropped: UInt64 = 0
  /// PATH_CHALLENGEs sent to an address a session's datagrams came from (§12.11).
  public var pathChallenges: UInt64 = 0
  /// Sessions moved to a new address once it answered its challenge (§12.11).
  public var migrations: UInt64 = 0
  /// INITs left unanswered because the crypto seam gave fewer random bytes than asked (a
  /// broken random source: no session id, nonce or key can be made).
  public var randomShortfalls: UInt64 = 0
  /// Version 1 client datagrams (`54 48 01` …) dropped: version 1 is removed (§12.14), so
  /// they get nothing back (admin requests of version 1 are ``malformed``).
  public var versionOneDropped: UInt64 = 0
}

extension ChannelName {
  /// The name as text (it is ASCII).
  var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension UserID {
  /// The user id as text (it is ASCII).
  var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// How many entries each of the server's tables holds (``EdgeServer/tableCounts``). Each is
/// bounded: sessions and login sessions together, ended sessions and departures by
/// ``EdgeConfig/maxSessions``, admin nonces by 4,096, join sources by
/// ``JoinLimit/maxSources``; bans and user bans by `maxSessions` each; login channels by 16
/// per login session and queued member events by 256 per login session.
public struct EdgeTableCounts: Equatable, Sendable, CustomStringConvertible {
  public var sessions: Int
  public var endedSessions: Int
  public var departures: Int
  public var bans: Int
  public var adminNonces: Int
  public var joinSources: Int
  public var logins: Int
  /// Login channels with at least one member.
  public var loginChannels: Int
  /// Member events waiting in all login sessions' queues.
  public var queuedEvents: Int
  public var userBans: Int

  public var description: String {
    "sessions \(sessions) ended \(endedSessions) departures \(departures) bans \(bans)"
      + " nonces \(adminNonces) join-sources \(joinSources) logins \(logins)"
      + " login-channels \(loginChannels) queued-events \(queuedEvents) user-bans \(userBans)"
  }
}
