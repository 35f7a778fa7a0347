// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The sessions' own codec, ``Packet``: version 1's header (docs/PROTOCOL.md §2.2) and the
/// message bodies, no longer the wire (the device's layer writes version 2's datagrams from
/// the messages, §12.10) but what the sessions, the simulation's record and the benchmarks
/// still read and write. Every message round-trips, the layout is pinned byte by byte,
/// every malformed datagram is refused with the exact ``WireError``, and random or mutated
/// datagrams never trap and are accepted only when canonical.
struct PacketTests {
  // MARK: - Round trip

  @Test func roundTrip_join_withAndWithoutRejoin_everyTokenAndChannelBound() throws {
    let appIDs = [try AppID(validating: "a".utf8), try AppID(validating: Self.visible(64))]
    let channels = [try ChannelName(validating: "a".utf8), try Self.longChannel()]
    let tokens = [Token.empty, try Token(validating: Self.visible(Token.maximumLength))]
    for isRejoin in [false, true] {
      for uid: UInt32 in [0, 1, .max] {
        for appID in appIDs {
          for channel in channels {
            for token in tokens {
              let request = JoinRequest(
                uid: uid, appID: appID, channel: channel, token: token, isRejoin: isRejoin)
              try Self.expectRoundTrip(.join(request))
            }
          }
        }
      }
    }
  }

  @Test func roundTrip_join_keepsA63ByteChannel_holdingEveryAllowedPunctuation() throws {
    let channel = try Self.longChannel()
    #expect(channel.bytes.count == ChannelName.maximumLength)
    #expect(Set(Self.punctuation).isSubset(of: channel.bytes))
    let request = JoinRequest(
      uid: 5, appID: try AppID(validating: "a".utf8), channel: channel, token: .empty,
      isRejoin: false)
    let bytes = Packet(cookie: Self.cookie, message: .join(request)).encoded
    #expect(try Packet.decode(bytes[...]).message == .join(request))
  }

  @Test func roundTrip_heartbeat() throws {
    for sequence: UInt32 in [0, 1, 0x0102_0304, .max] {
      try Self.expectRoundTrip(.heartbeat(sequence: sequence))
    }
  }

  @Test func roundTrip_leave() throws {
    try Self.expectRoundTrip(.leave)
  }

  @Test func roundTrip_renewToken_emptyAnd512Bytes() throws {
    try Self.expectRoundTrip(.renewToken(.empty))
    try Self.expectRoundTrip(.renewToken(try Token(validating: "x".utf8)))
    try Self.expectRoundTrip(.renewToken(try Token(validating: Self.visible(Token.maximumLength))))
  }

  @Test func roundTrip_accept_resumedOrNot_tokenTimeLeftZeroAndMax() throws {
    for resumed in [false, true] {
      for timeLeft: UInt32 in [0, .max] {
        for serverTime: UInt64 in [0, .max] {
          let accept = JoinAccept(
            uid: 1001, serverTimeMs: serverTime, tokenTimeLeftMs: timeLeft, resumed: resumed)
          try Self.expectRoundTrip(.accept(accept))
        }
      }
    }
  }

  @Test func roundTrip_refuse_everyReason() throws {
    #expect(RefuseReason.allCases.count == 5)
    for reason in RefuseReason.allCases { try Self.expectRoundTrip(.refuse(reason)) }
  }

  @Test func roundTrip_heartbeatAck() throws {
    for (sequence, time): (UInt32, UInt64) in [(0, 0), (42, 1_700_000_000_000), (.max, .max)] {
      try Self.expectRoundTrip(.heartbeatAck(sequence: sequence, serverTimeMs: time))
    }
  }

  @Test func roundTrip_presence_zeroOneAndMaximumEntries_ofEveryKind() throws {
    for count in [0, 1, 2, 3, PresenceDigest.maximumEntries] {
      for first in 0..<PresenceEntry.Kind.allCases.count where count > 0 || first == 0 {
        let entries = Self.entries(count, firstKind: first)
        let digest = try PresenceDigest(entries)
        try Self.expectRoundTrip(.presence(digest))
        let decoded = try Packet.decode(
          Packet(cookie: Self.cookie, message: .presence(digest)).encoded[...])
        guard case .presence(let received) = decoded.message else {
          Issue.record("decoded \(decoded.message), not a presence")
          continue
        }
        #expect(received.count == count)
        #expect(received.isEmpty == (count == 0))
        #expect(Array(received) == entries)
      }
    }
  }

  @Test func roundTrip_kick_everyReason() throws {
    #expect(KickReason.allCases.count == 3)
    for reason in KickReason.allCases { try Self.expectRoundTrip(.kick(reason)) }
  }

  @Test func roundTrip_tokenExpired_andSessionUnknown() throws {
    try Self.expectRoundTrip(.tokenExpired)
    try Self.expectRoundTrip(.sessionUnknown)
  }

  @Test func roundTrip_tokenRenewed_acceptedAndRefusedForEveryReason() throws {
    for timeLeft: UInt32 in [0, 3_600_000, .max] {
      try Self.expectRoundTrip(.tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: timeLeft)))
      for reason in RefuseReason.allCases {
        try Self.expectRoundTrip(
          .tokenRenewed(TokenRenewal(refused: reason, tokenTimeLeftMs: timeLeft)))
      }
    }
  }

  @Test func roundTrip_everyMessage_withCookieOneAndMax() throws {
    for sample in try Self.samples() {
      for cookie: UInt64 in [1, .max] {
        try Self.expectRoundTrip(sample.packet.message, cookie: cookie)
      }
    }
  }

  @Test func encode_neverExceedsMaximumSize_atTheLargestJoinAndPresence() throws {
    let join = JoinRequest(
      uid: .max, appID: try AppID(validating: Self.visible(AppID.maximumLength)),
      channel: try Self.longChannel(), token: try Token(validating: Self.visible(512)),
      isRejoin: true)
    #expect(Packet(cookie: Self.cookie, message: .join(join)).encoded.count == 660)
    let digest = try PresenceDigest(Self.entries(PresenceDigest.maximumEntries))
    #expect(Packet(cookie: Self.cookie, message: .presence(digest)).encoded.count == 1193)
  }

  @Test func presenceDigest_maximumEntries_isTheMostThatFitOneDatagram() throws {
    let max = PresenceDigest.maximumEntries
    #expect(max == 131)
    #expect(Packet.headerSize + 2 + max * 9 <= Packet.maximumSize)
    #expect(Packet.headerSize + 2 + (max + 1) * 9 > Packet.maximumSize)
    #expect(throws: WireError.oversized) { try PresenceDigest(Self.entries(max + 1)) }
  }

  @Test func encode_writesHeader_magicVersionTypeAndCookie_forEveryMessage() throws {
    let samples = try Self.samples()
    #expect(Set(samples.map(\.type)) == Set(Self.definedTypes))
    for sample in samples {
      let bytes = sample.packet.encoded
      #expect(Array(bytes.prefix(4)) == [0x54, 0x48, 0x01, sample.type], "\(sample.name)")
      #expect(Array(bytes[4..<12]) == Self.bigEndian(Self.cookie), "\(sample.name)")
    }
  }

  /// Sessions encode with the client's encoder alone (so a device's library holds no
  /// encoder of a server's message): for every client message it writes what the full
  /// encoder writes, and a server's message it does not write (a LEAVE's header instead).
  @Test func encodeAsClient_isTheFullEncoder_forEveryClientMessage() throws {
    for sample in try Self.samples() {
      var bytes: [UInt8] = []
      sample.packet.encodeAsClient(into: &bytes)
      if sample.type < 0x80 {
        #expect(bytes == sample.packet.encoded, "\(sample.name)")
      } else {
        let leave = Packet(cookie: sample.packet.cookie, message: .leave).encoded
        #expect(bytes == leave, "\(sample.name)")
      }
    }
  }

  @Test func encodeInto_appendsAfterBytesAlreadyInTheBuffer() throws {
    let packet = Packet(cookie: Self.cookie, message: .heartbeat(sequence: 42))
    var buffer: [UInt8] = [0xAA, 0xBB]
    packet.encode(into: &buffer)
    packet.encode(into: &buffer)
    #expect(buffer == [0xAA, 0xBB] + packet.encoded + packet.encoded)
  }

  @Test func decode_readsASliceThatDoesNotStartAtIndexZero() throws {
    let entries = Self.entries(5)
    let packet = Packet(cookie: Self.cookie, message: .presence(try PresenceDigest(entries)))
    let bytes = packet.encoded
    let buffer: [UInt8] = [0xEE, 0xEE, 0xEE] + bytes + [0xEE]
    let decoded = try Packet.decode(buffer[3..<(3 + bytes.count)])
    #expect(decoded == packet)
    guard case .presence(let digest) = decoded.message else {
      Issue.record("decoded \(decoded.message), not a presence")
      return
    }
    #expect(Array(digest) == entries)
  }

  // MARK: - Golden bytes (version 1's encoding, docs/PROTOCOL.md §2.2)

  @Test func golden_heartbeat() throws {
    // Once docs/PROTOCOL.md's worked example, when version 1 was the wire; §9's is now
    // version 2's sealed HEARTBEAT (HandshakeVectorTests reproduces it).
    let bytes: [UInt8] = [
      0x54, 0x48, 0x01, 0x02,  // "TH", version 1, HEARTBEAT
      0x8F, 0x3A, 0x51, 0xC2, 0x07, 0xD4, 0xE9, 0x6B,  // cookie
      0x00, 0x00, 0x00, 0x2A,  // sequence 42
    ]
    try Self.expectGolden(.heartbeat(sequence: 42), bytes)
  }

  @Test func golden_accept() throws {
    let bytes: [UInt8] = [
      0x54, 0x48, 0x01, 0x81,  // "TH", version 1, ACCEPT
      0x8F, 0x3A, 0x51, 0xC2, 0x07, 0xD4, 0xE9, 0x6B,  // cookie
      0x00, 0x00, 0x03, 0xE9,  // uid 1001
      0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00,  // serverTimeMs 1_700_000_000_000
      0x00, 0x36, 0xEE, 0x80,  // tokenTimeLeftMs 3_600_000
      0x01,  // flags: resumed
    ]
    let accept = JoinAccept(
      uid: 1001, serverTimeMs: 1_700_000_000_000, tokenTimeLeftMs: 3_600_000, resumed: true)
    try Self.expectGolden(.accept(accept), bytes)
  }

  @Test func golden_join() throws {
    let bytes: [UInt8] = [
      0x54, 0x48, 0x01, 0x01,  // "TH", version 1, JOIN
      0x8F, 0x3A, 0x51, 0xC2, 0x07, 0xD4, 0xE9, 0x6B,  // cookie
      0x00, 0x00, 0x00, 0x00,  // uid 0: the server assigns one
      0x01,  // flags: rejoin
      0x08, 0x64, 0x65, 0x6D, 0x6F, 0x2D, 0x61, 0x70, 0x70,  // app id "demo-app"
      0x05, 0x6C, 0x6F, 0x62, 0x62, 0x79,  // channel "lobby"
      0x00, 0x05, 0x74, 0x30, 0x6B, 0x33, 0x6E,  // token "t0k3n"
    ]
    let request = JoinRequest(
      uid: 0, appID: try AppID(validating: "demo-app".utf8),
      channel: try ChannelName(validating: "lobby".utf8),
      token: try Token(validating: "t0k3n".utf8),
      isRejoin: true)
    try Self.expectGolden(.join(request), bytes)
  }

  @Test func golden_presence() throws {
    let bytes: [UInt8] = [
      0x54, 0x48, 0x01, 0x84,  // "TH", version 1, PRESENCE
      0x8F, 0x3A, 0x51, 0xC2, 0x07, 0xD4, 0xE9, 0x6B,  // cookie
      0x00, 0x02,  // 2 entries
      0x00, 0x00, 0x03, 0xE9, 0x01, 0x00, 0x00, 0x00, 0x00,  // uid 1001 JOINED, silent 0 ms
      0x00, 0x00, 0x00, 0x07, 0x03, 0x00, 0x00, 0x00, 0xFA,  // uid 7 LEFT, silent 250 ms
    ]
    let digest = try PresenceDigest([
      PresenceEntry(uid: 1001, kind: .joined, silentForMs: 0),
      PresenceEntry(uid: 7, kind: .left, silentForMs: 250),
    ])
    try Self.expectGolden(.presence(digest), bytes)
  }

  @Test func golden_shortServerMessages() throws {
    let header: [UInt8] = [0x8F, 0x3A, 0x51, 0xC2, 0x07, 0xD4, 0xE9, 0x6B]
    let cases: [(Message, [UInt8])] = [
      (.leave, [0x54, 0x48, 0x01, 0x03] + header),
      (
        .renewToken(try Token(validating: "ab".utf8)),
        [0x54, 0x48, 0x01, 0x04] + header + [0, 2, 0x61, 0x62]
      ),
      (.refuse(.invalidToken), [0x54, 0x48, 0x01, 0x82] + header + [0x03]),
      (
        .heartbeatAck(sequence: 42, serverTimeMs: 1_700_000_000_000),
        [0x54, 0x48, 0x01, 0x83] + header + [0, 0, 0, 0x2A, 0, 0, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0]
      ),
      (.kick(.sameUID), [0x54, 0x48, 0x01, 0x85] + header + [0x02]),
      (.tokenExpired, [0x54, 0x48, 0x01, 0x86] + header),
      (.sessionUnknown, [0x54, 0x48, 0x01, 0x87] + header),
      (
        .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 3_600_000)),
        [0x54, 0x48, 0x01, 0x88] + header + [0x00, 0x00, 0x36, 0xEE, 0x80]
      ),
      (
        .tokenRenewed(TokenRenewal(refused: .tokenExpired, tokenTimeLeftMs: 0)),
        [0x54, 0x48, 0x01, 0x88] + header + [0x04, 0, 0, 0, 0]
      ),
    ]
    for (message, bytes) in cases { try Self.expectGolden(message, bytes) }
  }

  // MARK: - Rejection: truncated, oversized, header

  @Test func decode_rejectsEmptyInput_asTruncated() {
    #expect(Self.decodeError([]) == .truncated)
  }

  @Test func decode_rejectsTruncatedPacket_ofEveryType() throws {
    for sample in try Self.samples() {
      let bytes = sample.packet.encoded
      for length in 0..<bytes.count {
        #expect(
          Self.decodeError(bytes[..<length]) == .truncated,
          "\(sample.name) cut to \(length) of \(bytes.count) bytes")
      }
    }
  }

  @Test func decode_rejectsHeaderCutAfterTheTypeByte_asTruncated_evenForAnUnknownType() {
    // The cookie is read before the type is looked up: a short header is just short.
    for type: UInt8 in [0x00, 0x02, 0x7F, 0xFF] {
      let header = Self.header(type: type)
      for length in 4..<Packet.headerSize {
        #expect(Self.decodeError(header[..<length]) == .truncated, "type \(type), \(length) bytes")
      }
    }
  }

  @Test func decode_rejectsOneByteOverMaximumSize_asOversized() {
    #expect(
      Self.decodeError([UInt8](repeating: 0, count: Packet.maximumSize + 1)[...]) == .oversized)
    let padded = Self.header(type: 0x02) + [UInt8](repeating: 0, count: Packet.maximumSize - 11)
    #expect(padded.count == Packet.maximumSize + 1)
    #expect(Self.decodeError(padded[...]) == .oversized)
    #expect(Self.decodeError([UInt8](repeating: 0x54, count: 65_536)[...]) == .oversized)
  }

  @Test func decode_judgesExactlyMaximumSize_onItsContent_notAsOversized() {
    let padded = Self.header(type: 0x02) + [UInt8](repeating: 0, count: Packet.maximumSize - 12)
    #expect(padded.count == Packet.maximumSize)
    #expect(Self.decodeError(padded[...]) == .trailingBytes)
  }

  @Test func decode_rejectsBadMagic_inEitherByte() throws {
    let bytes = Packet(cookie: Self.cookie, message: .heartbeat(sequence: 1)).encoded
    for value in UInt8.min...UInt8.max {
      if value != 0x54 {
        #expect(Self.decodeError(Self.patch(bytes, at: 0, value)) == .badMagic, "byte 0 = \(value)")
      }
      if value != 0x48 {
        #expect(Self.decodeError(Self.patch(bytes, at: 1, value)) == .badMagic, "byte 1 = \(value)")
      }
    }
    #expect(Self.decodeError([0x48, 0x54, 0x01, 0x02]) == .badMagic)
    // The first wrong byte decides, even before the rest has arrived.
    #expect(Self.decodeError([0x00]) == .badMagic)
    #expect(Self.decodeError([0x54, 0x00]) == .badMagic)
  }

  @Test func decode_rejectsEveryOtherVersion_asUnsupportedVersion() throws {
    let bytes = Packet(cookie: Self.cookie, message: .heartbeat(sequence: 1)).encoded
    for version in UInt8.min...UInt8.max where version != Packet.version {
      #expect(Self.decodeError(Self.patch(bytes, at: 2, version)) == .unsupportedVersion(version))
      // The version is judged before the type byte or the cookie is read.
      #expect(Self.decodeError([0x54, 0x48, version]) == .unsupportedVersion(version))
    }
  }

  @Test func decode_rejectsEveryUndefinedTypeByte_asUnknownType() {
    var undefined = 0
    for type in UInt8.min...UInt8.max where !Self.definedTypes.contains(type) {
      undefined += 1
      #expect(Self.decodeError(Self.header(type: type)[...]) == .unknownType(type))
      #expect(
        Self.decodeError((Self.header(type: type) + [0, 0, 0, 1])[...]) == .unknownType(type))
    }
    #expect(undefined == 256 - 20)
  }

  @Test func decode_rejectsTrailingBytes_afterEveryType() throws {
    for sample in try Self.samples() {
      let bytes = sample.packet.encoded
      #expect(Self.decodeError((bytes + [0x00])[...]) == .trailingBytes, "\(sample.name)")
      let second = Array(bytes.prefix(Packet.maximumSize - bytes.count))
      if !second.isEmpty {
        #expect(Self.decodeError((bytes + second)[...]) == .trailingBytes, "\(sample.name) twice")
      }
    }
  }

  // MARK: - Rejection: invalid fields

  @Test func decode_rejectsJoinFlagsOtherThanZeroOrOne_asInvalidField() throws {
    let bytes = try Self.rawJoin(flags: 0)
    #expect(Self.decodeError(bytes[...]) == nil)
    #expect(Self.decodeError(Self.patch(bytes, at: 16, 1)) == nil)
    for flags in UInt8(2)...UInt8.max {
      #expect(Self.decodeError(Self.patch(bytes, at: 16, flags)) == .invalidField, "flags \(flags)")
    }
  }

  @Test func decode_rejectsAcceptFlagsOtherThanZeroOrOne_asInvalidField() throws {
    let accept = JoinAccept(uid: 1, serverTimeMs: 2, tokenTimeLeftMs: 3, resumed: false)
    let bytes = Packet(cookie: Self.cookie, message: .accept(accept)).encoded
    #expect(bytes.count == 29)
    for flags in UInt8(2)...UInt8.max {
      #expect(Self.decodeError(Self.patch(bytes, at: 28, flags)) == .invalidField, "flags \(flags)")
    }
  }

  @Test func decode_acceptsRefuseReasonsOneToFive_andRejectsEveryOther_asInvalidField() throws {
    let bytes = Self.header(type: 0x82) + [0]
    for value in UInt8.min...UInt8.max {
      let result = Self.decodeResult(Self.patch(bytes, at: 12, value))
      if (1...5).contains(value) {
        #expect(result == .success(.refuse(RefuseReason(rawValue: value)!)), "reason \(value)")
      } else {
        #expect(result == .failure(.invalidField), "reason \(value)")
      }
    }
  }

  @Test func decode_acceptsKickReasonsOneToThree_andRejectsEveryOther_asInvalidField() throws {
    let bytes = Self.header(type: 0x85) + [0]
    for value in UInt8.min...UInt8.max {
      let result = Self.decodeResult(Self.patch(bytes, at: 12, value))
      if (1...3).contains(value) {
        #expect(result == .success(.kick(KickReason(rawValue: value)!)), "reason \(value)")
      } else {
        #expect(result == .failure(.invalidField), "reason \(value)")
      }
    }
  }

  @Test func decode_acceptsTokenRenewedStatusZeroToFive_andRejectsEveryOther_asInvalidField() {
    let bytes = Self.header(type: 0x88) + [0, 0, 0, 0, 7]
    for value in UInt8.min...UInt8.max {
      let result = Self.decodeResult(Self.patch(bytes, at: 12, value))
      if value <= 5 {
        let renewal = TokenRenewal(refused: RefuseReason(rawValue: value), tokenTimeLeftMs: 7)
        #expect(result == .success(.tokenRenewed(renewal)), "status \(value)")
      } else {
        #expect(result == .failure(.invalidField), "status \(value)")
      }
    }
    #expect(Self.decodeResult(Self.patch(bytes, at: 12, 9)) == .failure(.invalidField))
  }

  @Test func decode_rejectsPresenceKindsOtherThanOneToThree_inAnyEntry_asInvalidField() throws {
    let bytes = Packet(cookie: Self.cookie, message: .presence(try PresenceDigest(Self.entries(3))))
      .encoded
    for entry in 0..<3 {
      let offset = Packet.headerSize + 2 + entry * 9 + 4
      for kind in UInt8.min...UInt8.max where !(1...3).contains(kind) {
        #expect(
          Self.decodeError(Self.patch(bytes, at: offset, kind)) == .invalidField,
          "entry \(entry), kind \(kind)")
      }
    }
  }

  @Test func decode_rejectsPresenceCountAboveMaximumEntries_asInvalidField() throws {
    let max = UInt16(PresenceDigest.maximumEntries)
    let full = Packet(
      cookie: Self.cookie,
      message: .presence(try PresenceDigest(Self.entries(PresenceDigest.maximumEntries)))
    ).encoded
    #expect(Self.decodeError(full[...]) == nil)
    // The count is judged before the entries are read.
    for count in [max + 1, 0x0100, 0xFFFF] {
      let announced = Self.header(type: 0x84) + Self.bigEndian(count)
      #expect(Self.decodeError(announced[...]) == .invalidField, "count \(count)")
      var countPatched = full
      countPatched.replaceSubrange(12..<14, with: Self.bigEndian(count))
      #expect(Self.decodeError(countPatched[...]) == .invalidField, "count \(count)")
    }
  }

  @Test func decode_rejectsForbiddenChannelNames_asInvalidField() throws {
    let forbidden: [[UInt8]] = [
      [], Array("a/b".utf8), [0x61, 0x80], [0x00], [0xFF], Array("\"".utf8), Array("'".utf8),
      Array("*".utf8), Array("\\".utf8), Array("`".utf8), Array("a\tb".utf8), [0x7F],
      [UInt8](repeating: 0x61, count: ChannelName.maximumLength + 1),
    ]
    for channel in forbidden {
      #expect(
        Self.decodeError(try Self.rawJoin(channel: channel)[...]) == .invalidField, "\(channel)")
    }
  }

  @Test func decode_acceptsExactlyTheSpecChannelCharacters() throws {
    let allowed = Set(Self.alphanumerics + Self.punctuation)
    #expect(allowed.count == 62 + 27)
    for byte in UInt8.min...UInt8.max {
      let expected: WireError? = allowed.contains(byte) ? nil : .invalidField
      #expect(Self.decodeError(try Self.rawJoin(channel: [byte])[...]) == expected, "byte \(byte)")
    }
  }

  @Test func decode_rejectsBadAppIDs_emptyTooLongOrNotVisibleASCII_asInvalidField() throws {
    let bad: [[UInt8]] = [
      [], Self.visible(AppID.maximumLength + 1), Array("my app".utf8), [0x7F], [0x80], [0x00],
    ]
    for appID in bad {
      #expect(Self.decodeError(try Self.rawJoin(appID: appID)[...]) == .invalidField, "\(appID)")
    }
    for byte in UInt8.min...UInt8.max {
      let expected: WireError? = (0x21...0x7E).contains(byte) ? nil : .invalidField
      #expect(Self.decodeError(try Self.rawJoin(appID: [byte])[...]) == expected, "byte \(byte)")
    }
  }

  @Test func decode_rejectsBadTokens_withSpaceOrOver512Bytes_inJoinAndRenewToken() throws {
    let bad: [[UInt8]] = [Array("a b".utf8), Self.visible(Token.maximumLength + 1), [0x80], [0x00]]
    for token in bad {
      #expect(
        Self.decodeError(try Self.rawJoin(token: token)[...]) == .invalidField, "\(token.count)")
      let renew = Self.header(type: 0x04) + Self.bigEndian(UInt16(token.count)) + token
      #expect(Self.decodeError(renew[...]) == .invalidField, "\(token.count)")
    }
    for byte in UInt8.min...UInt8.max {
      let expected: WireError? = (0x21...0x7E).contains(byte) ? nil : .invalidField
      #expect(Self.decodeError(try Self.rawJoin(token: [byte])[...]) == expected, "byte \(byte)")
    }
  }

  // MARK: - Fuzz

  @Test func decode_neverTraps_onRandomBytes_andAcceptsOnlyCanonicalPackets() {
    var random = SeededRandom(seed: 0x7E7E_0001)
    var buffer = [UInt8](repeating: 0, count: 1304)
    var tally = FuzzTally()
    for round in 0..<20_000 {
      let length = random.below(1301)
      buffer.withUnsafeMutableBytes { raw in
        for offset in stride(from: 0, to: length, by: 8) {
          raw.storeBytes(of: random.next(), toByteOffset: offset, as: UInt64.self)
        }
      }
      // Half the inputs get a valid header start, so the bodies are exercised too.
      if round % 2 == 0 && length >= 4 {
        buffer[0] = 0x54
        buffer[1] = 0x48
        buffer[2] = Packet.version
        buffer[3] = Self.definedTypes[random.below(Self.definedTypes.count)]
      }
      tally.check(buffer[0..<length])
    }
    #expect(tally.failures == [])
    #expect(tally.errors["oversized", default: 0] > 0)
    #expect(tally.errors["badMagic", default: 0] > 0)
    #expect(tally.errors["invalidField", default: 0] > 0)
  }

  @Test func decode_neverTraps_onMutatedPackets_andAcceptsOnlyCanonicalPackets() throws {
    let samples = try Self.samples().map { $0.packet.encoded }
    var random = SeededRandom(seed: 0x7E7E_0002)
    var tally = FuzzTally()
    for _ in 0..<20_000 {
      var bytes = samples[random.below(samples.count)]
      for _ in 0...random.below(3) { Self.mutate(&bytes, &random) }
      tally.check(bytes[...])
    }
    #expect(tally.failures == [])
    #expect(tally.accepted > 100)
    for error: WireError in [.truncated, .badMagic, .invalidField, .trailingBytes] {
      #expect(tally.errors["\(error)", default: 0] > 0, "\(error) never seen")
    }
  }

  @Test func decode_rejectsEveryStrictPrefix_ofRandomValidPackets_asTruncated() throws {
    var random = SeededRandom(seed: 0x7E7E_0003)
    for _ in 0..<200 {
      let packet = try Self.randomPacket(&random)
      let bytes = packet.encoded
      #expect(bytes.count <= Packet.maximumSize)
      #expect(try Packet.decode(bytes[...]) == packet)
      let length = random.below(bytes.count)
      #expect(
        Self.decodeError(bytes[..<length]) == .truncated, "\(packet.message) cut to \(length)")
    }
  }
}

// MARK: - Helpers

extension PacketTests {
  static let cookie: UInt64 = 0x8F3A_51C2_07D4_E96B
  static let definedTypes: [UInt8] = Array(0x01...0x08) + Array(0x81...0x8C)
  /// The channel-name punctuation of docs/BEHAVIOUR.md §1.6, space included.
  static let punctuation = Array(" !#$%&()+-:;<=.>?@[]^_{}|~,".utf8)
  static let alphanumerics = Array(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)

  /// `count` bytes of printable ASCII without space, cycling through all of it.
  static func visible(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(0x21 + $0 % 94) }
  }

  /// 63 bytes: every allowed punctuation character, then letters and digits.
  static func longChannel() throws -> ChannelName {
    try ChannelName(validating: Array((punctuation + alphanumerics).prefix(63)))
  }

  static func entries(_ count: Int, firstKind: Int = 0) -> [PresenceEntry] {
    let kinds = PresenceEntry.Kind.allCases
    return (0..<count).map { index in
      let uid: UInt32 = index == 1 ? .max : UInt32(index) &* 2_654_435_761
      let silent: UInt32 = index == 2 ? .max : UInt32(index) &* 97
      return PresenceEntry(
        uid: uid, kind: kinds[(firstKind + index) % kinds.count], silentForMs: silent)
    }
  }

  /// One valid packet of every type, small and large.
  static func samples() throws -> [(name: String, type: UInt8, packet: Packet)] {
    let small = JoinRequest(
      uid: 0, appID: try AppID(validating: "a".utf8),
      channel: try ChannelName(validating: "b".utf8),
      token: .empty, isRejoin: false)
    let large = JoinRequest(
      uid: 77, appID: try AppID(validating: visible(64)), channel: try longChannel(),
      token: try Token(validating: visible(512)), isRejoin: true)
    let accept = JoinAccept(
      uid: 1001, serverTimeMs: 1_700_000_000_000, tokenTimeLeftMs: 0, resumed: true)
    let messages: [(String, UInt8, Message)] =
      [
        ("join (smallest)", 0x01, .join(small)),
        ("join (largest)", 0x01, .join(large)),
        ("heartbeat", 0x02, .heartbeat(sequence: 9)),
        ("leave", 0x03, .leave),
        ("renew_token (empty)", 0x04, .renewToken(.empty)),
        ("renew_token", 0x04, .renewToken(try Token(validating: visible(40)))),
        ("accept", 0x81, .accept(accept)),
        ("refuse", 0x82, .refuse(.rejected)),
        ("heartbeat_ack", 0x83, .heartbeatAck(sequence: 9, serverTimeMs: 123_456)),
        ("presence (empty)", 0x84, .presence(try PresenceDigest([]))),
        ("presence (3)", 0x84, .presence(try PresenceDigest(entries(3)))),
        (
          "presence (maximum)", 0x84,
          .presence(try PresenceDigest(entries(PresenceDigest.maximumEntries)))
        ),
        ("kick", 0x85, .kick(.banned)),
        ("token_expired", 0x86, .tokenExpired),
        ("session_unknown", 0x87, .sessionUnknown),
        (
          "token_renewed (ok)", 0x88,
          .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 60_000))
        ),
        (
          "token_renewed (refused)", 0x88,
          .tokenRenewed(TokenRenewal(refused: .invalidToken, tokenTimeLeftMs: 0))
        ),
      ] + (try loginSamples())
    return messages.map { (name: $0.0, type: $0.1, packet: Packet(cookie: cookie, message: $0.2)) }
  }

  /// A random valid packet of a random type.
  private static func randomPacket(_ random: inout SeededRandom) throws -> Packet {
    func bytes(_ range: ClosedRange<Int>, from alphabet: [UInt8]) -> [UInt8] {
      (0..<(range.lowerBound + random.below(range.count))).map { _ in
        alphabet[random.below(alphabet.count)]
      }
    }
    let visibleAlphabet = visible(94)
    let message: Message
    switch random.below(20) {
    case 0:
      message = .join(
        JoinRequest(
          uid: UInt32(truncatingIfNeeded: random.next()),
          appID: try AppID(validating: bytes(1...64, from: visibleAlphabet)),
          channel: try ChannelName(validating: bytes(1...63, from: alphanumerics + punctuation)),
          token: try Token(validating: bytes(0...512, from: visibleAlphabet)),
          isRejoin: random.below(2) == 1))
    case 1: message = .heartbeat(sequence: UInt32(truncatingIfNeeded: random.next()))
    case 2: message = .leave
    case 3: message = .renewToken(try Token(validating: bytes(0...512, from: visibleAlphabet)))
    case 4:
      message = .accept(
        JoinAccept(
          uid: UInt32(truncatingIfNeeded: random.next()), serverTimeMs: random.next(),
          tokenTimeLeftMs: UInt32(truncatingIfNeeded: random.next()), resumed: random.below(2) == 1)
      )
    case 5: message = .refuse(RefuseReason.allCases[random.below(RefuseReason.allCases.count)])
    case 6:
      message = .heartbeatAck(
        sequence: UInt32(truncatingIfNeeded: random.next()), serverTimeMs: random.next())
    case 7:
      let kinds = PresenceEntry.Kind.allCases
      let entries = (0..<random.below(PresenceDigest.maximumEntries + 1)).map { _ in
        PresenceEntry(
          uid: UInt32(truncatingIfNeeded: random.next()), kind: kinds[random.below(kinds.count)],
          silentForMs: UInt32(truncatingIfNeeded: random.next()))
      }
      message = .presence(try PresenceDigest(entries))
    case 8: message = .kick(KickReason.allCases[random.below(KickReason.allCases.count)])
    case 9: message = .tokenExpired
    case 10: message = .sessionUnknown
    case 12:
      message = .login(
        LoginRequest(
          appID: try AppID(validating: bytes(1...64, from: visibleAlphabet)),
          userID: try UserID(validating: bytes(1...64, from: visibleAlphabet)),
          token: try Token(validating: bytes(0...512, from: visibleAlphabet)),
          isRelogin: random.below(2) == 1))
    case 13:
      message = .loginHeartbeat(
        sequence: UInt32(truncatingIfNeeded: random.next()),
        eventsReceived: UInt32(truncatingIfNeeded: random.next()))
    case 14: message = .logout
    case 15:
      let kinds = ChannelOperation.Kind.allCases
      message = .channelOperation(
        ChannelOperation(
          sequence: UInt32(truncatingIfNeeded: random.next()),
          kind: kinds[random.below(kinds.count)],
          channel: try ChannelName(validating: bytes(1...63, from: alphanumerics + punctuation))))
    case 16:
      message = .loginAccept(
        LoginAccept(
          serverTimeMs: random.next(), tokenTimeLeftMs: UInt32(truncatingIfNeeded: random.next()),
          resumed: random.below(2) == 1))
    case 17: message = .loginRefuse(code: UInt8(1 + random.below(255)))
    case 18:
      var entries: [MemberEvent.Entry] = []
      var size = 0
      while entries.count < 255 {
        let entry = MemberEvent.Entry(
          kind: random.below(2) == 0 ? .joined : .left,
          channel: try ChannelName(validating: bytes(1...63, from: alphanumerics + punctuation)),
          userID: try UserID(validating: bytes(1...64, from: visibleAlphabet)))
        size += MemberEvents.entrySize(channel: entry.channel, userID: entry.userID)
        if size > MemberEvents.capacity || (!entries.isEmpty && random.below(4) == 0) { break }
        entries.append(entry)
      }
      message = .memberEvents(
        try MemberEvents(firstSequence: UInt32(truncatingIfNeeded: random.next()), entries: entries)
      )
    case 19: message = .channelAck(sequence: UInt32(truncatingIfNeeded: random.next()))
    default:
      let reasons: [RefuseReason?] = [nil] + RefuseReason.allCases
      message = .tokenRenewed(
        TokenRenewal(
          refused: reasons[random.below(reasons.count)],
          tokenTimeLeftMs: UInt32(truncatingIfNeeded: random.next())))
    }
    return Packet(cookie: random.next() | 1, message: message)
  }

  /// One random edit: a bit flip, a truncation, an insertion, a deletion or an overwrite.
  private static func mutate(_ bytes: inout [UInt8], _ random: inout SeededRandom) {
    let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x7F, 0x80, 0xFF]
    switch random.below(6) {
    case 0 where !bytes.isEmpty:
      bytes[random.below(bytes.count)] ^= 1 << UInt8(random.below(8))
    case 1 where !bytes.isEmpty:
      bytes.removeLast(1 + random.below(bytes.count))
    case 2:
      let inserted = (0...random.below(8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      bytes.insert(contentsOf: inserted, at: random.below(bytes.count + 1))
    case 3 where !bytes.isEmpty:
      let start = random.below(bytes.count)
      bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(8)))
    case 4 where !bytes.isEmpty:
      bytes[random.below(bytes.count)] = interesting[random.below(interesting.count)]
    default:
      bytes.append(UInt8(truncatingIfNeeded: random.next()))
    }
  }

  static func expectRoundTrip(
    _ message: Message, cookie: UInt64 = cookie, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let packet = Packet(cookie: cookie, message: message)
    let bytes = packet.encoded
    #expect(bytes.count <= Packet.maximumSize, sourceLocation: sourceLocation)
    let decoded = try Packet.decode(bytes[...])
    #expect(decoded == packet, sourceLocation: sourceLocation)
    #expect(decoded.encoded == bytes, sourceLocation: sourceLocation)
  }

  static func expectGolden(
    _ message: Message, _ golden: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let packet = Packet(cookie: cookie, message: message)
    #expect(packet.encoded == golden, sourceLocation: sourceLocation)
    #expect(try Packet.decode(golden[...]) == packet, sourceLocation: sourceLocation)
  }

  static func decodeError(_ bytes: ArraySlice<UInt8>) -> WireError? {
    do throws(WireError) {
      _ = try Packet.decode(bytes)
      return nil
    } catch {
      return error
    }
  }

  static func decodeResult(_ bytes: ArraySlice<UInt8>) -> Result<Message, WireError> {
    Result { () throws(WireError) in try Packet.decode(bytes).message }
  }

  /// The 12-byte header with `type`, version 1 and ``cookie``.
  static func header(type: UInt8) -> [UInt8] {
    [0x54, 0x48, Packet.version, type] + bigEndian(cookie)
  }

  /// A JOIN built by hand, so each field can hold what ``JoinRequest`` would refuse.
  static func rawJoin(
    flags: UInt8 = 0, appID: [UInt8] = Array("app".utf8), channel: [UInt8] = Array("room".utf8),
    token: [UInt8] = Array("tok".utf8)
  ) throws -> [UInt8] {
    try #require(appID.count <= 255 && channel.count <= 255 && token.count <= 0xFFFF)
    return header(type: 0x01) + bigEndian(UInt32(7)) + [flags]
      + [UInt8(appID.count)] + appID + [UInt8(channel.count)] + channel
      + bigEndian(UInt16(token.count)) + token
  }

  static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    stride(from: T.bitWidth - 8, through: 0, by: -8).map { UInt8(truncatingIfNeeded: value >> $0) }
  }

  static func patch(_ bytes: [UInt8], at offset: Int, _ value: UInt8) -> ArraySlice<UInt8> {
    var copy = bytes
    copy[offset] = value
    return copy[...]
  }
}

/// What a fuzz run saw: every decode either throws a ``WireError`` or returns a packet that
/// re-encodes to exactly the input.
private struct FuzzTally {
  var accepted = 0
  /// How often each error was thrown, by its description.
  var errors: [String: Int] = [:]
  /// The first few inputs that broke the rule, for the report.
  var failures: [String] = []

  mutating func check(_ input: ArraySlice<UInt8>) {
    do throws(WireError) {
      let packet = try Packet.decode(input)
      accepted += 1
      if !packet.encoded.elementsEqual(input) { fail("not canonical", input) }
    } catch {
      errors["\(error)", default: 0] += 1
      if input.count > Packet.maximumSize && error != .oversized { fail("\(error)", input) }
    }
  }

  private mutating func fail(_ what: String, _ input: ArraySlice<UInt8>) {
    if failures.count < 5 { failures.append("\(what): \(Array(input))") }
  }
}

extension SeededRandom {
  /// A value in `0..<bound` (the modulo bias is irrelevant for fuzzing).
  fileprivate mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
