// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import TetherCore

/// The login profile's messages (docs/PROTOCOL.md §6, "Login sessions") in the sessions' own
/// codec, ``Packet`` (version 1's header, §2.2: see PacketTests): round trips at their
/// bounds, the byte layout, and every field a decoder must refuse.
struct LoginPacketTests {
  static let cookie = PacketTests.cookie

  static func user(_ text: String) throws -> UserID { try UserID(validating: Array(text.utf8)) }
  static func channel(_ text: String) throws -> ChannelName {
    try ChannelName(validating: Array(text.utf8))
  }

  // MARK: - Round trip

  @Test func roundTrip_login_reloginOrNot_atEveryFieldBound() throws {
    let appIDs = [try AppID(validating: "a".utf8), try AppID(validating: PacketTests.visible(64))]
    let users = [try Self.user("u"), try UserID(validating: PacketTests.visible(64))]
    let tokens = [Token.empty, try Token(validating: PacketTests.visible(Token.maximumLength))]
    for isRelogin in [false, true] {
      for appID in appIDs {
        for userID in users {
          for token in tokens {
            let request = LoginRequest(
              appID: appID, userID: userID, token: token, isRelogin: isRelogin)
            try PacketTests.expectRoundTrip(.login(request))
          }
        }
      }
    }
  }

  @Test func roundTrip_loginHeartbeat_logout_channelAck() throws {
    for value: UInt32 in [0, 1, .max] {
      try PacketTests.expectRoundTrip(
        .loginHeartbeat(sequence: value, session: value &+ 1, eventsReceived: ~value))
      try PacketTests.expectRoundTrip(.channelAck(sequence: value))
    }
    try PacketTests.expectRoundTrip(.logout)
  }

  @Test func roundTrip_channelOperation_bothKinds_longestName() throws {
    for kind in ChannelOperation.Kind.allCases {
      for name in [try Self.channel("c"), try PacketTests.longChannel()] {
        let operation = ChannelOperation(session: .max, sequence: 7, kind: kind, channel: name)
        try PacketTests.expectRoundTrip(.channelOperation(operation))
      }
    }
  }

  @Test func roundTrip_loginAccept_andEveryNonZeroRefusalCode() throws {
    for resumed in [false, true] {
      for timeLeft: UInt32 in [0, .max] {
        let accept = LoginAccept(serverTimeMs: .max, tokenTimeLeftMs: timeLeft, resumed: resumed)
        try PacketTests.expectRoundTrip(.loginAccept(accept))
      }
    }
    for code in UInt8(1)...UInt8.max { try PacketTests.expectRoundTrip(.loginRefuse(code: code)) }
  }

  @Test func memberEvents_iterateInOrder_numberedFromTheFirstSequence() throws {
    let entries = [
      MemberEvent.Entry(
        kind: .joined, channel: try Self.channel("room"), userID: try Self.user("b")),
      MemberEvent.Entry(kind: .left, channel: try Self.channel("x y"), userID: try Self.user("c~")),
    ]
    let events = try MemberEvents(firstSequence: .max, entries: entries)
    let bytes = Packet(cookie: Self.cookie, message: .memberEvents(events)).encoded
    guard case .memberEvents(let decoded) = try Packet.decode(bytes[...]).message else {
      Issue.record("not member events")
      return
    }
    let seen = Array(decoded)
    #expect(seen.count == 2)
    #expect(seen.map(\.sequence) == [.max, 0])
    #expect(seen.map(\.kind) == [.joined, .left])
    #expect(seen.map { Array($0.channel) } == [Array("room".utf8), Array("x y".utf8)])
    #expect(seen.map { Array($0.userID) } == [Array("b".utf8), Array("c~".utf8)])
  }

  @Test func memberEvents_fillingTheCapacity_fitsOneDatagram_andOneMoreByteDoesNot() throws {
    // Entries of 3 + 63 + 64 = 130 bytes: 9 fit (1170 of 1179), then shorter ones up to
    // exactly the capacity.
    let long = MemberEvent.Entry(
      kind: .joined, channel: try PacketTests.longChannel(),
      userID: try UserID(validating: PacketTests.visible(64)))
    var entries = Array(repeating: long, count: 9)
    let rest = MemberEvents.capacity - 9 * 130
    #expect(rest == 9)
    let filler = MemberEvent.Entry(
      kind: .left, channel: try Self.channel("abcd"), userID: try Self.user("u"))
    #expect(MemberEvents.entrySize(channel: filler.channel, userID: filler.userID) == 8)
    entries.append(filler)
    let fits = try MemberEvents(firstSequence: 1, entries: entries)
    let bytes = Packet(cookie: Self.cookie, message: .memberEvents(fits)).encoded
    #expect(bytes.count == Packet.maximumSize - 1)
    let overflow = MemberEvent.Entry(
      kind: .left, channel: try Self.channel("abcd"), userID: try Self.user("uv"))
    #expect(throws: WireError.oversized) {
      _ = try MemberEvents(
        firstSequence: 1, entries: Array(entries.dropLast()) + [overflow, filler])
    }
    #expect(throws: WireError.invalidField) { _ = try MemberEvents(firstSequence: 1, entries: []) }
  }

  // MARK: - Layout

  @Test func golden_loginAndMemberEvents() throws {
    let login = LoginRequest(
      appID: try AppID(validating: "A".utf8), userID: try Self.user("bo"),
      token: try Token(validating: "t".utf8), isRelogin: true)
    let loginBytes = Packet(cookie: 1, message: .login(login)).encoded
    #expect(
      loginBytes == [0x54, 0x48, 1, 0x05, 0, 0, 0, 0, 0, 0, 0, 1]
        + [1, 1, 0x41, 2, 0x62, 0x6F, 0, 1, 0x74])
    let events = try MemberEvents(
      session: 0x0A0B_0C0D, firstSequence: 0x0102_0304,
      entries: [
        MemberEvent.Entry(kind: .left, channel: try Self.channel("c"), userID: try Self.user("u"))
      ])
    let eventBytes = Packet(cookie: 1, message: .memberEvents(events)).encoded
    #expect(
      eventBytes == [0x54, 0x48, 1, 0x8B, 0, 0, 0, 0, 0, 0, 0, 1]
        + [0x0A, 0x0B, 0x0C, 0x0D, 1, 2, 3, 4, 1, 2, 1, 0x63, 1, 0x75])
    let accept = LoginAccept(serverTimeMs: 5, tokenTimeLeftMs: 6, resumed: true, session: 7)
    #expect(
      Packet(cookie: 1, message: .loginAccept(accept)).encoded.suffix(17)
        == [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 6, 1, 0, 0, 0, 7])
    #expect(
      Packet(cookie: 1, message: .channelAck(session: 7, sequence: 9)).encoded.suffix(8)
        == [0, 0, 0, 7, 0, 0, 0, 9])
    // Both upstream messages of a server session's numbering name it (docs/PROTOCOL.md §6).
    let heartbeat = Packet(
      cookie: 1, message: .loginHeartbeat(sequence: 2, session: 7, eventsReceived: 3))
    #expect(heartbeat.encoded.count == 24)
    #expect(heartbeat.encoded.suffix(12) == [0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 3])
    let operation = ChannelOperation(
      session: 7, sequence: 9, kind: .leave, channel: try Self.channel("c"))
    #expect(
      Packet(cookie: 1, message: .channelOperation(operation)).encoded
        == [0x54, 0x48, 1, 0x08, 0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 7, 0, 0, 0, 9, 2, 1, 0x63])
  }

  // MARK: - Rejection

  @Test func decode_rejectsLoginAndLoginAcceptFlagsAboveOne_asInvalidField() throws {
    let login = Packet(
      cookie: 1,
      message: .login(
        LoginRequest(
          appID: try AppID(validating: "a".utf8), userID: try Self.user("u"), token: .empty,
          isRelogin: false))
    ).encoded
    let accept = Packet(
      cookie: 1,
      message: .loginAccept(LoginAccept(serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false))
    ).encoded
    #expect(accept.count == 12 + 17)
    for flags in UInt8(2)...UInt8.max {
      #expect(PacketTests.decodeError(PacketTests.patch(login, at: 12, flags)) == .invalidField)
      #expect(PacketTests.decodeError(PacketTests.patch(accept, at: 24, flags)) == .invalidField)
    }
  }

  @Test func decode_rejectsLoginRefuseCodeZero_andChannelOperationKindsOtherThanOneOrTwo() throws {
    #expect(PacketTests.decodeError((PacketTests.header(type: 0x8A) + [0])[...]) == .invalidField)
    let operation = Packet(
      cookie: 1,
      message: .channelOperation(
        ChannelOperation(sequence: 1, kind: .join, channel: try Self.channel("c")))
    ).encoded
    for kind in UInt8.min...UInt8.max where kind != 1 && kind != 2 {
      #expect(PacketTests.decodeError(PacketTests.patch(operation, at: 20, kind)) == .invalidField)
    }
  }

  @Test func decode_rejectsBadUserIDs_inLoginAndMemberEvents() throws {
    let appID = Array("a".utf8)
    for bad in [[], Array(" ".utf8), [0x7F], [0x80], PacketTests.visible(65)] as [[UInt8]] {
      var login = PacketTests.header(type: 0x05) + [0, UInt8(appID.count)] + appID
      login += [UInt8(bad.count)] + bad + [0, 0]
      #expect(PacketTests.decodeError(login[...]) == .invalidField, "user id \(bad)")
      var events = PacketTests.header(type: 0x8B) + [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0x63]
      events += [UInt8(bad.count)] + bad
      #expect(PacketTests.decodeError(events[...]) == .invalidField, "user id \(bad)")
    }
  }

  @Test func decode_rejectsMemberEvents_withNoEntry_aBadKind_orABadChannel() throws {
    #expect(
      PacketTests.decodeError((PacketTests.header(type: 0x8B) + [0, 0, 0, 0, 0, 0, 0, 1, 0])[...])
        == .invalidField)
    let good = PacketTests.header(type: 0x8B) + [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0x63, 1, 0x75]
    #expect(PacketTests.decodeError(good[...]) == nil)
    for kind in UInt8.min...UInt8.max where kind != 1 && kind != 2 {
      #expect(PacketTests.decodeError(PacketTests.patch(good, at: 21, kind)) == .invalidField)
    }
    #expect(PacketTests.decodeError(PacketTests.patch(good, at: 23, 0x2A)) == .invalidField)  // '*'
    // Two entries announced, one present.
    #expect(PacketTests.decodeError(PacketTests.patch(good, at: 20, 2)) == .truncated)
  }
}

extension PacketTests {
  static func loginSamples() throws -> [(String, UInt8, Message)] {
    let login = LoginRequest(
      appID: try AppID(validating: "app".utf8), userID: try UserID(validating: "user-1".utf8),
      token: try Token(validating: visible(40)), isRelogin: false)
    let events = try MemberEvents(
      firstSequence: 3,
      entries: [
        MemberEvent.Entry(
          kind: .joined, channel: try ChannelName(validating: "lobby".utf8),
          userID: try UserID(validating: "u2".utf8)),
        MemberEvent.Entry(
          kind: .left, channel: try longChannel(), userID: try UserID(validating: visible(64))),
      ])
    return [
      ("login", 0x05, .login(login)),
      ("login_heartbeat", 0x06, .loginHeartbeat(sequence: 4, eventsReceived: 2)),
      ("logout", 0x07, .logout),
      (
        "channel_operation", 0x08,
        .channelOperation(
          ChannelOperation(sequence: 1, kind: .join, channel: try ChannelName(validating: "c".utf8))
        )
      ),
      (
        "login_accept", 0x89,
        .loginAccept(LoginAccept(serverTimeMs: 5, tokenTimeLeftMs: 6, resumed: true))
      ),
      ("login_refuse", 0x8A, .loginRefuse(code: 5)),
      ("member_events", 0x8B, .memberEvents(events)),
      ("channel_ack", 0x8C, .channelAck(sequence: 9)),
    ]
  }
}
