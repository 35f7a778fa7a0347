// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Valid values the seeds and the structured operations are made of.
enum Samples {
  static let appID = try! AppID(validating: Array("app-1".utf8))
  static let channel = try! ChannelName(validating: Array("lobby".utf8))
  static let token = try! Token(validating: Array("token-A".utf8))
  static let token2 = try! Token(validating: Array("token-B".utf8))
  static let user = try! UserID(validating: Array("alice".utf8))
  static let otherUser = try! UserID(validating: Array("bob".utf8))

  /// A member-joined, a member-left and a joined again, numbered from `first`.
  static func memberEvents(first: UInt32) -> MemberEvents {
    try! MemberEvents(
      firstSequence: first,
      entries: [
        MemberEvent.Entry(kind: .joined, channel: channel, userID: otherUser),
        MemberEvent.Entry(kind: .left, channel: channel, userID: otherUser),
        MemberEvent.Entry(kind: .joined, channel: channel, userID: otherUser),
      ])
  }

  /// A server → client message built from the input's fields (the encoder only writes
  /// valid ones: this reaches the states raw bytes rarely do), one of `kinds`: those both
  /// profiles take (2, 4, 5, 6, 7) built here, the others by `own`.
  static func serverMessage(
    _ input: inout FuzzInput, kinds: UInt8, own: (UInt8, inout FuzzInput) -> Message
  ) -> Message {
    let selector = input.u8() % kinds
    return linkMessage(selector, &input) ?? own(selector, &input)
  }

  private static func linkMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message? {
    switch selector {
    case 2: return .heartbeatAck(sequence: input.u32(), serverTimeMs: input.u64())
    case 4: return .kick(input.pick(KickReason.allCases))
    case 5: return .tokenExpired
    case 6: return .sessionUnknown
    case 7:
      let refused: RefuseReason? = input.bool() ? nil : input.pick(RefuseReason.allCases)
      return .tokenRenewed(TokenRenewal(refused: refused, tokenTimeLeftMs: input.u32()))
    default: return nil
    }
  }

  /// The encoding of the sample packet `name` (with cookie 0).
  static func packet(_ name: String) -> [UInt8] {
    packets(cookie: 0).first { $0.name == name }!.packet.encoded
  }

  /// One packet of every message type, as the encoder writes them.
  static func packets(cookie: UInt64) -> [(name: String, packet: Packet)] {
    let join = JoinRequest(uid: 7, appID: appID, channel: channel, token: token, isRejoin: true)
    let entries = [
      PresenceEntry(uid: 1001, kind: .joined, silentForMs: 0),
      PresenceEntry(uid: 7, kind: .left, silentForMs: 250),
      PresenceEntry(uid: 9, kind: .alive, silentForMs: 5_000),
    ]
    let messages: [(String, Message)] = [
      ("join", .join(join)),
      ("heartbeat", .heartbeat(sequence: 42)),
      ("leave", .leave),
      ("renew", .renewToken(token2)),
      (
        "accept",
        .accept(
          JoinAccept(uid: 1001, serverTimeMs: 1, tokenTimeLeftMs: 60_000, resumed: false))
      ),
      ("refuse-expired", .refuse(.tokenExpired)),
      ("refuse-invalid", .refuse(.invalidToken)),
      ("ack", .heartbeatAck(sequence: 1, serverTimeMs: 2)),
      ("presence", .presence(try! PresenceDigest(entries))),
      ("kick", .kick(.banned)),
      ("kick-same-uid", .kick(.sameUID)),
      ("token-expired", .tokenExpired),
      ("session-unknown", .sessionUnknown),
      ("renewed", .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 90_000))),
      ("renew-refused", .tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0))),
      // The login profile's.
      ("login", .login(LoginRequest(appID: appID, userID: user, token: token, isRelogin: false))),
      ("relogin", .login(LoginRequest(appID: appID, userID: user, token: token, isRelogin: true))),
      ("login-heartbeat", .loginHeartbeat(sequence: 7, eventsReceived: 3)),
      ("logout", .logout),
      (
        "channel-join",
        .channelOperation(ChannelOperation(sequence: 1, kind: .join, channel: channel))
      ),
      (
        "channel-leave",
        .channelOperation(ChannelOperation(sequence: 2, kind: .leave, channel: channel))
      ),
      (
        "login-accept",
        .loginAccept(LoginAccept(serverTimeMs: 5, tokenTimeLeftMs: 60_000, resumed: false))
      ),
      (
        "login-accept-resumed",
        .loginAccept(LoginAccept(serverTimeMs: 6, tokenTimeLeftMs: 0, resumed: true))
      ),
      ("login-refuse", .loginRefuse(code: 5)),
      ("member-events", .memberEvents(memberEvents(first: 1))),
      ("channel-ack", .channelAck(sequence: 2)),
      ("kick-remote-login", .kick(.remoteLogin)),
    ]
    return messages.map { ($0.0, Packet(cookie: cookie, message: $0.1)) }
  }
}

/// A server message of the channel profile's own, built from the input (fuzz-session and
/// fuzz-link): ACCEPT (`selector` 0), REFUSE (1), else PRESENCE of up to 7 entries.
func channelServerMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
  switch selector {
  case 0:
    return .accept(
      JoinAccept(
        uid: input.u32(), serverTimeMs: input.u64(),
        tokenTimeLeftMs: input.pick([0, 1, 29_999, 30_001, 45_000], orAny: true),
        resumed: input.bool()))
  case 1: return .refuse(input.pick(RefuseReason.allCases))
  default:
    var entries: [PresenceEntry] = []
    for _ in 0..<Int(input.u8() % 8) {
      let uid = input.pick([1, 2, 3, 1001], orAny: true)
      let kind = input.pick(PresenceEntry.Kind.allCases)
      let silent = input.pick([0, 3_999, 4_000, 19_999, 20_000], orAny: true)
      entries.append(PresenceEntry(uid: uid, kind: kind, silentForMs: silent))
    }
    // At most 7 entries: a digest of them always builds.
    return .presence(try! PresenceDigest(entries))
  }
}
