// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// Protocol version 2 at the edge (docs/PROTOCOL.md §12): joins and logins through the
/// handshake, sealed traffic both ways, and version 1 beside it in one roster.
struct EdgeSecureJoinTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  @Test func aChannelJoin_takesTwoRoundTrips_thenEveryDatagramIsSealed() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    let answers = bench.connect(&device, Bench.channelRequest())
    let accept = try #require(answers.first?.message)
    guard case .accept(let body) = accept else {
      Issue.record("\(accept)")
      return
    }
    #expect(body.uid == 1_000_000)
    #expect(!body.resumed)
    #expect(body.tokenTimeLeftMs == 0)
    #expect(
      device.resetValue
        == ResetValue.of(
          SessionID(device.sessionID), edgeID: bench.config.edgeID,
          keys: bench.config.certificateKeys, crypto: SodiumCrypto()))
    #expect(bench.server.session(cookie: device.sessionID)?.uid == 1_000_000)
    // INIT 469 → RESPONSE 269, CONFIRM 201 → ACCEPT 67 (§12.13).
    #expect(bench.sent.map(\.bytes.count) == [269, 67])

    let acks = bench.data(&device, DevicePayloads.heartbeat(7))
    guard case .heartbeatAck(let sequence, _)? = acks.first?.message else {
      Issue.record("\(acks.map(\.bytes))")
      return
    }
    #expect(sequence == 7)
    #expect(bench.sent.last?.bytes.count == 46)
    // Nothing set aside: the one RESPONSE is all the counters hold.
    var answered = EdgeCounters()
    answered.handshakesAnswered = 1
    #expect(bench.server.counters == answered)
  }

  @Test func aLogin_getsLoginAccept_heartbeats_andChannelOperations() throws {
    var bench = Bench()
    var device = bench.device(.user(Bench.user("alice")))
    let answers = bench.connect(&device, Bench.loginRequest("alice"))
    guard case .loginAccept(let accept)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(!accept.resumed)
    #expect(answers.first?.bytes.count == 34)
    #expect(bench.server.loginSession(cookie: device.sessionID)?.userID == Bench.user("alice"))

    let ack = bench.data(
      &device, DevicePayloads.loginHeartbeat(1, session: accept.session, events: 0))
    guard case .heartbeatAck(1, _)? = ack.first?.message else {
      Issue.record("\(ack.map(\.bytes))")
      return
    }
    let joined = bench.data(
      &device,
      DevicePayloads.channelOperation(
        session: accept.session, sequence: 1, kind: .join, channel: "room"))
    #expect(joined.map(\.message) == [.channelAck(session: accept.session, sequence: 1)])
    #expect(bench.server.loginMembers(of: Bench.channel("room")) == [Bench.user("alice")])

    _ = bench.data(&device, DevicePayloads.logout)
    #expect(bench.server.loginSessionCount == 0)
  }

  @Test func aLeave_endsTheSession_andTheOthersSeeItLeft() throws {
    var bench = Bench()
    var alice = bench.device(.channel(Self.lobby, uid: 1))
    var bob = bench.device(.channel(Self.lobby, uid: 2), host: 2)
    bench.connect(&alice, Bench.channelRequest(uid: 1))
    bench.connect(&bob, Bench.channelRequest(uid: 2))
    let mark = bench.sent.count
    _ = bench.data(&alice, DevicePayloads.leave)
    #expect(bench.server.members(of: Self.lobby) == [2])
    let left = bench.received(by: &bob, since: mark).compactMap(\.message)
    guard case .presence(let digest)? = left.first else {
      Issue.record("\(left)")
      return
    }
    #expect(Array(digest).map(\.uid) == [1])
    #expect(Array(digest).map(\.kind) == [.left])
  }

  /// Version 1 is removed: a version 1 JOIN (with a token that would pass) gets nothing
  /// back and joins nobody; a version 2 device in the same channel finds it empty, and its
  /// digests go out sealed.
  @Test func aVersion1Join_getsNothing_andJoinsNobody() throws {
    var bench = Bench()
    let v1Address = PeerAddress(bytes: [0xC1, 0, 1])!
    let join = JoinRequest(
      uid: 1, appID: Fixture.appID, channel: Self.lobby,
      token: World.token(.channel(Self.lobby, uid: 1), expiresAt: 0), isRejoin: false)
    #expect(bench.send(Packet(cookie: 0xC0, message: .join(join)).encoded, from: v1Address) == [])
    #expect(bench.server.counters.versionOneDropped == 1)
    #expect(bench.server.members(of: Self.lobby) == [])

    var device = bench.device(.channel(Self.lobby, uid: 2), host: 2)
    let answers = bench.connect(&device, Bench.channelRequest(uid: 2))
    #expect(answers.first?.type == 0x81)
    // An empty channel: no snapshot after the ACCEPT.
    #expect(
      answers.dropFirst().compactMap(\.message).allSatisfy {
        if case .presence = $0 { false } else { true }
      })
    #expect(bench.server.members(of: Self.lobby) == [2])
    let tick = bench.advance(by: .seconds(1))
    #expect(!tick.contains { $0.address == v1Address })
    #expect(tick.allSatisfy { $0.bytes.first == 0x07 })
  }

  /// A version 2 session's id named as a version 1 cookie reaches nothing: version 1 is
  /// dropped whatever it names.
  @Test func aVersion1Packet_underAVersion2SessionsID_isDropped() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    bench.connect(&device, Bench.channelRequest())
    let out = bench.send(
      Packet(cookie: device.sessionID, message: .leave).encoded, from: device.address)
    #expect(out.isEmpty)
    #expect(bench.server.sessionCount == 1)
    #expect(bench.server.counters.versionOneDropped == 1)
    #expect(bench.server.counters.unknownSession == 0)
  }
}
