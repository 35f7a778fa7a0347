// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim
import TetherSodium

@_spi(Link) @testable import TetherCore

/// The device's version 2 layer (``SecureLink``, docs/PROTOCOL.md §12) between a real
/// channel or login session and an edge in memory (``MemoryEdge``: TetherEdge's token
/// opener and reset values, TetherCore's edge handshake and sealed data, on libsodium).
/// The sessions speak version 1's packets; what crosses is version 2 only, and nothing
/// that does not open reaches a session.
struct SecureLinkTests {
  typealias ChannelRig = LinkRig<ChannelSession<SeededRandom>, SodiumCrypto>
  typealias LoginRig = LinkRig<LoginSession<SeededRandom>, SodiumCrypto>

  /// A channel session joined through the layer.
  func joined(limits: KeyLimits = .standard) throws -> ChannelRig {
    let edge = try MemoryEdge()
    var rig = try ChannelRig(edge: edge, limits: limits)
    try rig.join(edge.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.session.state == .connected)
    return rig
  }

  // MARK: - Joining

  /// INIT → RESPONSE, CONFIRM → ACCEPT: two round trips, then CONNECTED with the uid the
  /// ACCEPT gave and the token's time left the edge sent (the session's clock for expiry).
  @Test func channelJoin_takesTwoRoundTrips_andTheSessionSeesVersion1sAccept() throws {
    let rig = try joined()
    #expect(rig.kinds() == [0x01, 0x03])
    #expect(rig.sent.map(\.count) == [469, 201])
    #expect(rig.notes.contains(.connectionStateChanged(.connected, .joinSuccess)))
    #expect(rig.session.uid == 7)
    #expect(rig.session.tokenExpiresAt == rig.now + .milliseconds(600_000))
    #expect(rig.link.sessionID != 0 && rig.edge.sessions[rig.link.sessionID] != nil)
    // The token's text never crosses: the INIT carries W alone.
    let text = try rig.edge.token(channel: "room", uid: 7).bytes
    #expect(!rig.sent.contains { $0.firstRange(of: text[2..<40]) != nil })
  }

  @Test func login_takesTwoRoundTrips_andReportsOK() throws {
    let edge = try MemoryEdge()
    var rig = try LoginRig(edge: edge)
    try rig.login(edge.token(user: "alice"))
    try rig.pump()
    #expect(rig.kinds() == [0x01, 0x03])
    #expect(rig.session.state == .connected)
    #expect(rig.notes.contains(.loginResult(.ok)))
  }

  /// Heartbeats go as 42-byte DATA (sequence and 4 zero bytes), their ACKs come back
  /// sealed and prove the round trip; a login heartbeat is 46 bytes.
  @Test func heartbeats_goSealed_bothWays() throws {
    var rig = try joined()
    let before = rig.sent.count
    try rig.run(for: .seconds(3))
    let beats = rig.sent[before...]
    #expect(beats.count == 3 && beats.allSatisfy { $0.count == 42 && $0[0] == 0x07 })
    #expect(rig.edge.opened.map { Array($0.prefix(1)) } == [[0x02], [0x02], [0x02]])
    #expect(rig.edge.opened.last == [0x02, 0, 0, 0, 3, 0, 0, 0, 0])
    #expect(rig.session.state == .connected)
    #expect(rig.now.since(rig.session.link.lastData) < .seconds(1))

    let edge = try MemoryEdge()
    var login = try LoginRig(edge: edge)
    try login.login(edge.token(user: "alice"))
    try login.pump()
    let start = login.sent.count
    try login.run(for: .seconds(2))
    #expect(login.sent[start...].allSatisfy { $0.count == 46 && $0[0] == 0x07 })
    #expect(login.session.state == .connected)
  }

  /// Under load: the COOKIE_REPLY makes the device send a new INIT at once, with a `mac2`
  /// that holds under the cookie; the join completes with no wait.
  @Test func cookieReply_sendsANewInitAtOnce_withMac2() throws {
    var edge = try MemoryEdge()
    edge.cookieFirst = true
    var rig = try ChannelRig(edge: edge)
    try rig.join(edge.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.kinds() == [0x01, 0x01, 0x03])
    let second = try InitMessage(decoding: rig.sent[1][...])
    #expect(EdgeHandshake.mac2Holds(second, cookie: edge.cookie, crypto: SodiumCrypto()))
    #expect(rig.session.state == .connected)
  }

  /// A CONFIRM lost: each retry of the session sends the same CONFIRM bytes while the
  /// ticket lasts (3 s here), and a new INIT after; the join completes with no callback
  /// but the usual ones.
  @Test func aLostConfirm_isRepeatedWhileTheTicketLasts_thenANewInit() throws {
    var edge = try MemoryEdge()
    edge.confirmsToIgnore = 100
    var rig = try ChannelRig(edge: edge)
    try rig.join(edge.token(channel: "room", uid: 7))
    try rig.run(for: .milliseconds(2_500))
    let confirms = rig.sent.filter { $0[0] == 0x03 }
    #expect(confirms.count >= 2 && Set(confirms).count == 1)
    #expect(rig.kinds().filter { $0 == 0x01 }.count == 1)
    try rig.run(for: .seconds(4))
    #expect(rig.kinds().filter { $0 == 0x01 }.count >= 2)
    rig.edge.confirmsToIgnore = 0
    try rig.run(for: .seconds(8))
    #expect(rig.session.state == .connected)
  }

  /// A new join after a leave is a new session: no resume of the one before.
  @Test func aJoinAfterALeave_resumesNothing() throws {
    var rig = try joined()
    try rig.call { session, output, now in session.leave(now: now, into: &output) }
    try rig.pump()
    let before = rig.sent.count
    try rig.join(rig.edge.token(channel: "room", uid: 7))
    try rig.pump()
    let initiation = rig.sent[before]
    #expect(initiation[0] == 0x01)
    #expect(rig.session.state == .connected)
    #expect(rig.edge.responded[rig.link.sessionID]?.request.resumeSessionID == 0)
  }

  // MARK: - Refusals

  /// A token the edge cannot open: REFUSE_CLEAR, DISCONNECTED/INVALID_TOKEN; for a login,
  /// LOGIN_FAILURE with INVALID_TOKEN.
  @Test func refuseClear_endsTheJoin_asAnInvalidToken() throws {
    let other = try MemoryEdge(certificate: "another certificate")
    var rig = try ChannelRig(edge: try MemoryEdge())
    try rig.join(other.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.session.state == .disconnected && rig.session.reason == .invalidToken)

    var login = try LoginRig(edge: try MemoryEdge())
    try login.login(other.token(user: "alice"))
    try login.pump()
    #expect(login.notes.contains(.loginResult(.invalidToken)))
    #expect(login.session.state == .disconnected)
  }

  /// REFUSE_SEALED at the INIT: the reasons of §12.6, 6 BANNED as FAILED/BANNED_BY_SERVER.
  @Test(arguments: [
    (UInt8(1), ConnectionChangedReason.invalidAppID), (2, .invalidChannelName),
    (3, .invalidToken), (4, .tokenExpired), (5, .rejectedByServer), (6, .bannedByServer),
  ])
  func refuseSealed_givesTheSessionItsReason(reason: UInt8, expected: ConnectionChangedReason)
    throws
  {
    var edge = try MemoryEdge()
    edge.refuseInit = (reason, reason == 5 ? 1 : 0)
    var rig = try ChannelRig(edge: edge)
    try rig.join(edge.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.session.reason == expected)
    #expect(rig.kinds() == [0x01])
  }

  @Test func loginRefusals_areTheLoginCodes() throws {
    for (code, expected) in [
      (UInt8(2), LoginError.rejected), (7, .notAuthorized), (6, .tokenExpired),
    ] {
      var edge = try MemoryEdge()
      edge.refuseInit = (code, 0)
      var rig = try LoginRig(edge: edge)
      try rig.login(edge.token(user: "alice"))
      try rig.pump()
      #expect(rig.notes.contains(.loginResult(expected)), "code \(code)")
      #expect(rig.session.state == .disconnected)
    }
  }

  /// A refusal at the CONFIRM comes sealed under the new keys, as DATA.
  @Test func refusalAtTheConfirm_isSealedData_andReachesTheSession() throws {
    var edge = try MemoryEdge()
    edge.refuseConfirm = (0x82, 5)
    var rig = try ChannelRig(edge: edge)
    try rig.join(edge.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.session.state == .failed && rig.session.reason == .rejectedByServer)

    var loginEdge = try MemoryEdge()
    loginEdge.refuseConfirm = (0x8A, 2)
    var login = try LoginRig(edge: loginEdge)
    try login.login(loginEdge.token(user: "alice"))
    try login.pump()
    #expect(login.notes.contains(.loginResult(.rejected)))
  }

  /// A refusal at the CONFIRM that is not one by §12.7's layout (a detail past 2; a
  /// LOGIN_REFUSE of code 0, or longer than its code and detail; shorter than reason and
  /// detail) is dropped and counted: the session stays CONNECTING and hears nothing.
  @Test func malformedRefusalsAtTheConfirm_areDropped() throws {
    for payload: [UInt8] in [[0x82, 5, 3], [0x82, 5]] {
      var edge = try MemoryEdge()
      edge.refuseConfirmPayload = payload
      var rig = try ChannelRig(edge: edge)
      try rig.join(edge.token(channel: "room", uid: 7))
      try rig.pump()
      #expect(rig.session.state == .connecting, "\(payload)")
      #expect(rig.link.dropped == 1, "\(payload)")
    }
    for payload: [UInt8] in [[0x8A, 0, 0], [0x8A, 2, 0, 0], [0x8A, 2, 3]] {
      var edge = try MemoryEdge()
      edge.refuseConfirmPayload = payload
      var rig = try LoginRig(edge: edge)
      try rig.login(edge.token(user: "alice"))
      try rig.pump()
      #expect(rig.session.state == .connecting, "\(payload)")
      #expect(!rig.notes.contains { if case .loginResult = $0 { true } else { false } })
      #expect(rig.link.dropped == 1, "\(payload)")
    }
  }

  // MARK: - Sealed notices and padded messages

  /// A PRESENCE and a TOKEN_EXPIRED sealed by the edge reach the channel session as
  /// version 1's: the member joins, then request-token and FAILED/TOKEN_EXPIRED.
  @Test func sealedPresenceAndTokenExpired_reachTheChannelSession() throws {
    var rig = try joined()
    let digest = try PresenceDigest([PresenceEntry(uid: 9, kind: .joined, silentForMs: 0)])
    rig.deliver(try rig.edge.send(.presence(digest), to: rig.link.sessionID))
    _ = rig.drain()
    #expect(rig.notes.contains { if case .userJoined(uid: 9, _) = $0 { true } else { false } })
    rig.deliver(try rig.edge.send(.tokenExpired, to: rig.link.sessionID))
    _ = rig.drain()
    #expect(rig.notes.suffix(2).first == .requestToken)
    #expect(rig.session.state == .failed && rig.session.reason == .tokenExpired)
  }

  /// A login's CHANNEL_OPERATION is 107 bytes whatever the name's length (the name
  /// zero-filled to 63), and the MEMBER_EVENTS the edge seals reach the session.
  @Test func channelOperations_arePadded_andMemberEventsReachTheLoginSession() throws {
    let edge = try MemoryEdge()
    var rig = try LoginRig(edge: edge)
    try rig.login(edge.token(user: "alice"))
    try rig.pump()
    for name in ["a", String(repeating: "c", count: 63)] {
      let channel = try ChannelName(validating: Array(name.utf8))
      let before = rig.sent.count
      try rig.call { session, output, now in
        try session.joinChannel(channel, now: now, into: &output)
      }
      try rig.pump()
      #expect(rig.sent[before...].map(\.count) == [107], "\(name.count)")
    }
    let operations = rig.edge.opened.filter { $0.first == 0x08 }
    #expect(operations.map(\.count) == [74, 74])
    #expect(operations.first?.suffix(62).allSatisfy { $0 == 0 } == true)
    #expect(operations.last?.suffix(63).allSatisfy { $0 == 0x63 } == true)

    let events = try MemberEvents(
      session: 1, firstSequence: 1,
      entries: [
        MemberEvent.Entry(
          kind: .joined, channel: try ChannelName(validating: Array("a".utf8)),
          userID: try UserID(validating: Array("bob".utf8)))
      ])
    rig.deliver(try rig.edge.send(.memberEvents(events), to: rig.link.sessionID))
    _ = rig.drain()
    #expect(rig.notes.contains { if case .memberJoined = $0 { true } else { false } })
  }

  // MARK: - Reset and path validation

  /// A RESET with this session's id and value: SESSION_UNKNOWN (RECONNECTING/
  /// KEEP_ALIVE_TIMEOUT and an INIT at once, resuming). With another value, or another
  /// id: nothing.
  @Test func reset_withTheSessionsValue_only() throws {
    var rig = try joined()
    let id = rig.link.sessionID
    var value = rig.edge.resetValue(id)
    value[3] ^= 1
    var forged: [UInt8] = [0x08]
    forged.appendBigEndian(id)
    rig.deliver(forged + value)
    var otherID: [UInt8] = [0x08]
    otherID.appendBigEndian(id + 1)
    rig.deliver(otherID + rig.edge.resetValue(id + 1))
    #expect(rig.drain().isEmpty && rig.session.state == .connected)
    #expect(rig.link.dropped == 2)

    rig.deliver(forged + rig.edge.resetValue(id))
    #expect(rig.session.state == .reconnecting && rig.session.reason == .keepAliveTimeout)
    let sent = rig.drain()
    #expect(sent.map { $0[0] } == [0x01])
  }

  /// PATH_CHALLENGE: PATH_RESPONSE with the same 8 bytes at once, sealed; nothing else.
  @Test func pathChallenge_isAnsweredAtOnce_andNothingElseHappens() throws {
    var rig = try joined()
    let notes = rig.notes.count
    let dropped = rig.link.dropped
    let challenge: [UInt8] = [0x8D, 1, 2, 3, 4, 5, 6, 7, 8]
    rig.deliver(try rig.edge.sendPayload(challenge, to: rig.link.sessionID))
    let sent = rig.drain()
    #expect(sent.count == 1 && sent[0].count == 42)
    #expect(try rig.edge.handle(sent[0][...]).isEmpty)
    #expect(rig.edge.opened.last == [0x09, 1, 2, 3, 4, 5, 6, 7, 8])
    #expect(rig.notes.count == notes && rig.session.state == .connected)
    #expect(rig.link.dropped == dropped)  // answered: taken, not dropped
  }

  // MARK: - Renewal and resume

  /// renew_token while CONNECTED: DATA with the new token's W (253 bytes); TOKEN_RENEWED
  /// moves the expiry, and the next handshake's INIT carries the new W.
  @Test func renewal_carriesW_andTheNewTokenIsUsedAfterwards() throws {
    var rig = try joined()
    let renewed = try rig.edge.token(channel: "room", uid: 7, expiresAt: 4_000_000_000)
    try rig.call { session, output, now in try session.renewToken(renewed, now: now, into: &output)
    }
    try rig.pump()
    let renewal = rig.sent.first { $0.count == 253 }
    #expect(renewal != nil)
    #expect(rig.session.tokenExpiresAt == rig.now + .milliseconds(900_000))
    let w = try TokenV2(text: renewed.bytes[...], crypto: SodiumCrypto()).sent
    #expect(rig.edge.opened.contains { $0.first == 0x04 && Array($0.dropFirst()) == w })

    // A rejoin now carries the renewed token's W.
    let before = rig.sent.count
    try rig.call { session, output, now in
      session.networkChanged(byUser: true, now: now, into: &output)
    }
    try rig.pump()
    let initiation = try InitMessage(decoding: rig.sent[before][...])
    #expect(Array(initiation.token) == w)
    #expect(rig.session.state == .connected)
  }

  /// A renewal with a text that is not a version 2 token sends nothing and is refused as
  /// a failed renewal (request-token, the previous token kept).
  @Test func renewal_withATokenThatIsNotVersion2_isRefusedLocally() throws {
    var rig = try joined()
    let before = rig.sent.count
    let v1 = try Token(validating: Array("not-a-v2-token".utf8))
    try rig.call { session, output, now in try session.renewToken(v1, now: now, into: &output) }
    #expect(rig.drain().isEmpty)
    #expect(rig.sent.count == before)
    #expect(rig.notes.last == .requestToken)
    #expect(rig.session.state == .connected)
  }

  /// The downlink dies: INTERRUPTED, then a resumed handshake (resume flag, the old id,
  /// a proof the edge checks) once it is back; the edge resumes, the session rejoins.
  @Test func resume_afterAnInterruption() throws {
    var rig = try joined()
    let oldID = rig.link.sessionID
    rig.downlink = false
    try rig.run(for: .seconds(5))
    #expect(rig.session.state == .reconnecting)
    rig.downlink = true
    try rig.run(for: .seconds(3))
    #expect(rig.session.state == .connected)
    #expect(rig.notes.contains { if case .rejoinChannelSuccess = $0 { true } else { false } })
    #expect(rig.link.sessionID != oldID && rig.link.sessionID != 0)
    #expect(rig.edge.responded[rig.link.sessionID]?.resumed == true)
    #expect(rig.edge.responded[rig.link.sessionID]?.request.resumeSessionID == oldID)
  }

  // MARK: - What changes nothing

  /// Every bit of a genuine DATA datagram flipped, then the genuine one twice: nothing
  /// reaches the session but the genuine one, once; the counts say why.
  @Test func bitFlippedAndReplayedData_changeNothing() throws {
    var rig = try joined()
    let notes = rig.notes.count
    let digest = Message.kick(.banned)
    let genuine = try rig.edge.send(digest, to: rig.link.sessionID)
    var flipped = genuine
    for bit in 0..<(genuine.count * 8) {
      flipped[bit / 8] ^= 1 << UInt8(bit % 8)
      rig.deliver(flipped)
      flipped[bit / 8] ^= 1 << UInt8(bit % 8)
    }
    #expect(rig.drain().isEmpty && rig.notes.count == notes)
    #expect(rig.session.state == .connected)
    #expect(rig.link.unopened > 0 && rig.link.dropped > 0)
    #expect(rig.link.unopened + rig.link.dropped + rig.link.replayed == UInt64(genuine.count * 8))

    // A replay of a heartbeat ack already taken: counted, nothing else.
    let ack = try rig.edge.send(.heartbeatAck(sequence: 1, serverTimeMs: 1), to: rig.link.sessionID)
    rig.deliver(ack)
    let replayedBefore = rig.link.replayed
    rig.deliver(ack)
    #expect(rig.link.replayed == replayedBefore + 1)

    rig.deliver(genuine)
    #expect(rig.session.state == .failed && rig.session.reason == .bannedByServer)
  }

  /// Version 1 datagrams (a KICK with the session's own cookie, a SESSION_UNKNOWN) and a
  /// RESPONSE replayed after the handshake ended: dropped, counted, nothing else.
  @Test func version1Datagrams_andLateHandshakeAnswers_areIgnored() throws {
    var rig = try joined()
    let notes = rig.notes.count
    let cookie = rig.session.link.cookie
    rig.deliver(Packet(cookie: cookie, message: .kick(.banned)).encoded)
    rig.deliver(Packet(cookie: cookie, message: .sessionUnknown).encoded)
    rig.deliver([0x02] + [UInt8](repeating: 0, count: 268))
    #expect(rig.drain().isEmpty && rig.notes.count == notes)
    #expect(rig.session.state == .connected && rig.link.dropped == 3)
  }

  /// Forged refusals and RESETs during CONNECTING change nothing: the attempts go on.
  @Test func forgedAnswersWhileConnecting_changeNothing() throws {
    let edge = try MemoryEdge()
    var rig = try ChannelRig(edge: edge)
    try rig.join(edge.token(channel: "room", uid: 7))
    let initiation = rig.drain()[0]
    rig.deliver([0x05] + [UInt8](repeating: 9, count: 16) + [1])  // another N_d
    rig.deliver([0x06] + Array(initiation[2..<18]) + [UInt8](repeating: 0, count: 42))
    rig.deliver([0x08] + [UInt8](repeating: 0, count: 24))
    #expect(rig.session.state == .connecting && rig.drain().isEmpty)
    #expect(rig.link.dropped == 3)
    for answer in try rig.edge.handle(initiation[...]) { rig.deliver(answer) }
    try rig.pump()
    #expect(rig.session.state == .connected)
  }

  /// A text that is not a version 2 token: nothing is sent; the join ends as the edge's
  /// invalid-token refusal would (channel DISCONNECTED/INVALID_TOKEN; login
  /// LOGIN_FAILURE, INVALID_TOKEN).
  @Test func aTokenThatIsNotVersion2_sendsNothing_andEndsTheJoin() throws {
    var rig = try ChannelRig(edge: try MemoryEdge())
    try rig.join(try Token(validating: Array("006abcdef".utf8)))
    #expect(rig.drain().isEmpty)
    #expect(rig.notes.contains(.connectionStateChanged(.connecting, .connecting)))
    #expect(rig.session.state == .disconnected && rig.session.reason == .invalidToken)

    var login = try LoginRig(edge: try MemoryEdge())
    try login.login(try Token(validating: Array("2.short".utf8)))
    #expect(login.drain().isEmpty)
    #expect(login.notes.contains(.loginResult(.invalidToken)))
    #expect(login.session.state == .disconnected)
  }

  /// Before the first ACCEPT, a token whose public expiry the device's clock has passed is
  /// refused as the edge would (request-token, FAILED/TOKEN_EXPIRED), with nothing sent; a
  /// clock that is unknown (0) or behind leaves the verdict to the edge.
  @Test func publicExpiry_beforeTheFirstAccept() throws {
    let edge = try MemoryEdge()
    var rig = try ChannelRig(edge: edge)
    rig.link.unixTime = 2_000_000_000
    try rig.join(edge.token(channel: "room", uid: 7, expiresAt: 1_999_999_999))
    #expect(rig.drain().isEmpty)
    #expect(rig.notes.contains(.requestToken))
    #expect(rig.session.state == .failed && rig.session.reason == .tokenExpired)

    var ahead = try ChannelRig(edge: edge)
    ahead.link.unixTime = 1_000
    try ahead.join(edge.token(channel: "room", uid: 7, expiresAt: 1_999_999_999))
    try ahead.pump()
    #expect(ahead.session.state == .connected)
  }

  // MARK: - Keys

  /// Past the rekey limit the layer makes a resumed handshake on its own: the session
  /// stays CONNECTED and hears nothing of it; DATA goes under the new keys afterwards.
  @Test func rekey_pastTheLimit_isAResumedHandshake_theSessionSeesNothing() throws {
    var limits = KeyLimits.standard
    limits.rekeyAfterMessages = 3
    var rig = try joined(limits: limits)
    let oldID = rig.link.sessionID
    let notes = rig.notes.count
    let dropped = rig.link.dropped
    try rig.run(for: .seconds(4))
    #expect(rig.notes.count == notes && rig.session.state == .connected)
    #expect(rig.link.sessionID != oldID)
    #expect(rig.link.dropped == dropped)  // the rekey's ACCEPT is the layer's own
    #expect(rig.edge.responded[rig.link.sessionID]?.resumed == true)
    #expect(rig.kinds(from: 2).filter { $0 == 0x01 }.count == 1)
    #expect(rig.sent.last?[0] == 0x07)
  }

  /// Past the hard limit nothing more is sealed.
  @Test func pastTheHardLimit_nothingIsSealed() throws {
    var limits = KeyLimits.standard
    limits.rekeyAfterMessages = 2
    limits.rejectAfterMessages = 2
    var rig = try joined(limits: limits)
    rig.downlink = false  // the rekey never completes
    let before = rig.sent.count
    try rig.run(for: .seconds(3))
    let data = rig.sent[before...].filter { $0[0] == 0x07 }
    #expect(data.count == 2)
  }

  /// leave(): two sealed LEAVEs, then nothing of the session is kept.
  @Test func leave_sendsTwoSealedLeaves_andForgetsTheKeys() throws {
    var rig = try joined()
    try rig.call { session, output, now in session.leave(now: now, into: &output) }
    let sent = rig.drain()
    #expect(sent.count == 2 && sent.allSatisfy { $0.count == 42 && $0[0] == 0x07 })
    #expect(rig.link.sessionID == 0)
  }
}
