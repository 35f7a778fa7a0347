// SPDX-License-Identifier: Apache-2.0
/// Every message the sessions and the edge speak: version 1's set, kept as their own
/// vocabulary (docs/PROTOCOL.md §3). On the wire protocol version 2 carries each as a sealed
/// DATA payload (§12.7), or stands for it with a datagram kind of its own (JOIN and LOGIN:
/// the handshake, §12.5; SESSION_UNKNOWN: RESET, §5.7). A ``Packet`` carries one, after
/// version 1's header with the session cookie (§2.2), inside the device and the edge.
public enum Message: Equatable, Sendable {
  // Client to server.
  /// Join (or rejoin) a channel. Sent again, unchanged but for `uid`, on every attempt.
  case join(JoinRequest)
  /// Keep-alive while joined; the server answers with ``heartbeatAck(_:)``.
  case heartbeat(sequence: UInt32)
  /// The client leaves; the server tells the others QUIT.
  case leave
  /// A new token for the joined (or logged-in) session; the server answers
  /// ``tokenRenewed(_:)``.
  case renewToken(Token)
  /// Log in (or back in) as a user of an app: the login profile.
  case login(LoginRequest)
  /// Keep-alive while logged in, with the server session the client is in
  /// (``LoginAccept/session``) and how many of its member events the client has taken (so
  /// the server sends again what it missed); answered with
  /// ``heartbeatAck(sequence:serverTimeMs:)`` when the session is the one the server holds.
  case loginHeartbeat(sequence: UInt32, session: UInt32 = 0, eventsReceived: UInt32)
  /// The client logs out; the others in its channels get member-left.
  case logout
  /// Join or leave one channel in a login session; answered with ``channelAck(sequence:)``.
  case channelOperation(ChannelOperation)

  // Server to client: every one carries the session cookie in the header.
  /// The join is accepted.
  case accept(JoinAccept)
  /// The join is refused.
  case refuse(RefuseReason)
  /// Answer to ``heartbeat(sequence:)``.
  case heartbeatAck(sequence: UInt32, serverTimeMs: UInt64)
  /// Who joined, who left and how long since each member was heard from.
  case presence(PresenceDigest)
  /// The server removed this session from the channel.
  case kick(KickReason)
  /// The session's token has expired.
  case tokenExpired
  /// The server no longer knows this session (restart, or timed out): rejoin.
  case sessionUnknown
  /// Answer to ``renewToken(_:)``.
  case tokenRenewed(TokenRenewal)
  /// The login is accepted.
  case loginAccept(LoginAccept)
  /// The login is refused, with the login error code of docs/BEHAVIOUR.md §2 (never 0; a code the
  /// client does not know reads as UNKNOWN).
  case loginRefuse(code: UInt8)
  /// Other users joined or left the session's channels.
  case memberEvents(MemberEvents)
  /// The channel operations up to `sequence` are applied, in server session `session`
  /// (``LoginAccept/session``).
  case channelAck(session: UInt32 = 0, sequence: UInt32)
}

/// The body of ``Message/join(_:)``.
public struct JoinRequest: Equatable, Sendable {
  /// The uid asked for; 0 asks the server to assign one.
  public var uid: UInt32
  public var appID: AppID
  public var channel: ChannelName
  public var token: Token
  /// True for a rejoin of a session the server may still hold under this cookie.
  public var isRejoin: Bool

  public init(uid: UInt32, appID: AppID, channel: ChannelName, token: Token, isRejoin: Bool) {
    self.uid = uid
    self.appID = appID
    self.channel = channel
    self.token = token
    self.isRejoin = isRejoin
  }
}

/// The body of ``Message/accept(_:)``.
public struct JoinAccept: Equatable, Sendable {
  /// The uid the session has in the channel (the server's choice when 0 was asked).
  public var uid: UInt32
  /// The server's clock, in milliseconds since its own epoch (informational).
  public var serverTimeMs: UInt64
  /// Milliseconds until the token expires, from when the server sent this; 0: never.
  public var tokenTimeLeftMs: UInt32
  /// True when the server still held the session (members saw no interruption).
  public var resumed: Bool

  public init(uid: UInt32, serverTimeMs: UInt64, tokenTimeLeftMs: UInt32, resumed: Bool) {
    self.uid = uid
    self.serverTimeMs = serverTimeMs
    self.tokenTimeLeftMs = tokenTimeLeftMs
    self.resumed = resumed
  }
}

/// Why the server refused a join.
public enum RefuseReason: UInt8, CaseIterable, Sendable {
  case invalidAppID = 1
  case invalidChannelName = 2
  case invalidToken = 3
  case tokenExpired = 4
  /// Anything else the server will not allow (e.g. the channel is full).
  case rejected = 5
}

/// Why the server removed a session.
public enum KickReason: UInt8, CaseIterable, Sendable {
  /// An administrator kicked or banned the uid.
  case banned = 1
  /// Another client joined the channel with the same uid.
  case sameUID = 2
  /// Another client logged in with the same user id (login sessions).
  case remoteLogin = 3
}

/// The body of ``Message/tokenRenewed(_:)``.
public struct TokenRenewal: Equatable, Sendable {
  /// nil: the new token was accepted; otherwise why not (``RefuseReason/invalidToken`` or
  /// ``RefuseReason/tokenExpired``).
  public var refused: RefuseReason?
  /// Milliseconds until the new token expires; 0: never. Meaningless when refused.
  public var tokenTimeLeftMs: UInt32

  public init(refused: RefuseReason?, tokenTimeLeftMs: UInt32) {
    self.refused = refused
    self.tokenTimeLeftMs = tokenTimeLeftMs
  }
}
