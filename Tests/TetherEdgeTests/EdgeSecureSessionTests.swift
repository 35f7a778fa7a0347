// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// A version 2 session's life at the edge after its handshake (docs/PROTOCOL.md §12.9,
/// §12.10): notices sealed afresh, the reset after a restart, renewal, resume.
struct EdgeSecureSessionTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  static func joined(
    uid: UInt32 = 1, expiresAt: UInt64 = 0, host: UInt8 = 1, in bench: inout Bench
  ) -> SecureDevice {
    var device = bench.device(.channel(Self.lobby, uid: uid), host: host, expiresAt: expiresAt)
    bench.connect(&device, Bench.channelRequest(uid: uid))
    return device
  }

  // MARK: - Notices (§12.9)

  /// A kick's KICK is sealed; each later datagram gets it again sealed afresh (a new
  /// counter, new bytes), for forget-after; then the keys go and a RESET answers.
  @Test func aKick_isRepeatedSealedAfresh_untilForgetAfter() throws {
    var bench = Bench()
    var alice = Self.joined(in: &bench)
    let wall = bench.wallClock
    let mark = bench.sent.count
    _ = bench.send(
      AdminKick(channel: Self.lobby, uid: 1, banSeconds: 0, unixTime: wall, nonce: 1)
        .sealed(appID: Fixture.appID, certificate: World.certificate),
      from: PeerAddress(bytes: [0xAD])!)
    let kicks = bench.received(by: &alice, since: mark)
    #expect(kicks.map(\.message) == [.kick(.banned)])
    var datagrams = Set<[UInt8]>()
    for sequence: UInt32 in 1...3 {
      let again = bench.send(alice.seal(DevicePayloads.heartbeat(sequence)), from: alice.address)
      #expect(again.count == 1)
      datagrams.insert(again.first?.bytes ?? [])
      #expect(
        again.compactMap { alice.open($0.bytes) }.map { EdgePayloadView(bytes: $0).message }
          == [.kick(.banned)])
    }
    #expect(datagrams.count == 3)
    #expect(bench.server.counters.noticesRepeated == 3)
    _ = bench.advance(by: bench.config.forgetAfter + .seconds(1))
    let late = bench.send(alice.seal(DevicePayloads.heartbeat(9)), from: alice.address)
    #expect(late.count == 1)
    #expect(late.first.map { alice.acceptsReset($0.bytes) } == true)
  }

  @Test func aTakeover_kicksTheOlderSession_sealed() throws {
    var bench = Bench()
    var alice = Self.joined(uid: 5, in: &bench)
    let mark = bench.sent.count
    var bob = Self.joined(uid: 5, host: 2, in: &bench)
    #expect(bench.received(by: &alice, since: mark).map(\.message) == [.kick(.sameUID)])
    #expect(bench.server.session(cookie: bob.sessionID)?.uid == 5)
    #expect(bench.server.session(cookie: alice.sessionID) == nil)
    _ = bench.data(&bob, DevicePayloads.heartbeat(1))
  }

  @Test func tokenExpiry_endsTheSessionWithASealedTokenExpired() throws {
    var bench = Bench()
    var alice = Self.joined(expiresAt: bench.wallClock + 5, in: &bench)
    let mark = bench.sent.count
    for _ in 0..<6 { _ = bench.advance(by: .seconds(1)) }
    #expect(bench.received(by: &alice, since: mark).compactMap(\.message) == [.tokenExpired])
    #expect(bench.server.sessionCount == 0)
  }

  // MARK: - The reset (§12.9)

  /// A restarted edge (same certificate and edge id) answers an old session's DATA with a
  /// RESET the device takes; an edge of another id makes one it does not.
  @Test func afterARestart_anOldSessionsData_getsAResetTheDeviceTakes() throws {
    var bench = Bench()
    var alice = Self.joined(in: &bench)
    bench.server = EdgeServer(config: bench.config)
    let heartbeat = alice.seal(DevicePayloads.heartbeat(1))
    let out = bench.sendUnvalidated(heartbeat, from: alice.address)
    #expect(out.map(\.bytes.count) == [25])
    #expect(out.first.map { alice.acceptsReset($0.bytes) } == true)
    #expect(bench.server.counters.resets == 1)

    var other = try EdgeConfig(
      appID: Fixture.appID, appCertificate: World.certificate, edgeID: EdgeID("edge-b:1"))
    other.recordsEvents = false
    bench.server = EdgeServer(config: other)
    let foreign = bench.sendUnvalidated(
      alice.seal(DevicePayloads.heartbeat(2)), from: alice.address)
    #expect(foreign.count == 1)
    #expect(foreign.first.map { alice.acceptsReset($0.bytes) } == false)
  }

  /// No RESET for a serial of this start not issued yet, or issued within the last ticket
  /// lifetime (its ticket may yet be confirmed); one for a serial issued longer ago. Never
  /// for a datagram under 42 bytes.
  @Test func aReset_onlyForASerialIssuedMoreThanATicketLifetimeAgo() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    bench.handshake(&device, Bench.channelRequest())  // never confirmed
    let issued = device.sessionID
    func probe(_ id: UInt64, size: Int = 42) -> [Outgoing] {
      bench.sendUnvalidated(
        [0x07] + DevicePayloads.bigEndian(id, 8) + [UInt8](repeating: 0xA5, count: size - 9),
        from: Bench.address(3))
    }
    #expect(probe(issued).isEmpty)
    #expect(probe(issued + 1).isEmpty)
    _ = bench.advance(by: bench.config.ticketLifetime + .seconds(1))
    #expect(probe(issued).map(\.bytes.count) == [25])
    #expect(probe(issued + 1).isEmpty)
    #expect(probe(issued, size: 41).isEmpty)
  }

  // MARK: - Renewal (§12.10)

  @Test func aRenewal_movesTheExpiry_andTheKeysStay() throws {
    var bench = Bench()
    let wall = bench.wallClock
    var alice = Self.joined(expiresAt: wall + 100, in: &bench)
    let newer = try TokenV2(
      text: Array(bench.token(.channel(Self.lobby, uid: 1), expiresAt: wall + 1000).utf8)[...],
      crypto: SodiumCrypto())
    let renewed = bench.data(&alice, DevicePayloads.renew(newer))
    #expect(
      renewed.map(\.message) == [
        .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 1_000_000))
      ])
    #expect(bench.server.table[alice.sessionID]?.tokenExpiry == wall + 1000)
    // The same keys go on.
    guard
      case .heartbeatAck(4, _)? = bench.data(&alice, DevicePayloads.heartbeat(4)).first?
        .message
    else {
      Issue.record("no ACK")
      return
    }
    // A token of a uid-0 grant for the channel admits uid 1 too.
    let wildcard = try TokenV2(
      text: Array(bench.token(.channel(Self.lobby, uid: 0), expiresAt: wall + 2000).utf8)[...],
      crypto: SodiumCrypto())
    #expect(
      bench.data(&alice, DevicePayloads.renew(wildcard)).map(\.message) == [
        .tokenRenewed(TokenRenewal(refused: nil, tokenTimeLeftMs: 2_000_000))
      ])
  }

  @Test func aRenewal_thatDoesNotGrantTheSession_isRefused_andTheOldTokenStays() throws {
    var bench = Bench()
    let wall = bench.wallClock
    var alice = Self.joined(expiresAt: wall + 100, in: &bench)
    let crypto = SodiumCrypto()
    let otherCertificate = TokenMinter(
      crypto: crypto, keys: try CertificateKeys(certificate: Array("cert-2".utf8)))
    let texts = [
      bench.token(.channel(Bench.channel("hall"), uid: 1)),
      bench.token(.channel(Self.lobby, uid: 2)),
      bench.token(.channel(Self.lobby, uid: 1), appID: try AppID(validating: Array("app-2".utf8))),
      otherCertificate.mint(
        appID: Fixture.appID, grant: .channel(Self.lobby, uid: 1), expiresAt: 0),
      bench.token(.channel(Self.lobby, uid: 1), expiresAt: wall),
    ]
    let reasons: [RefuseReason] = [
      .invalidToken, .invalidToken, .invalidToken, .invalidToken, .tokenExpired,
    ]
    for (text, reason) in zip(texts, reasons) {
      let token = try TokenV2(text: Array(text.utf8)[...], crypto: crypto)
      #expect(
        bench.data(&alice, DevicePayloads.renew(token)).map(\.message) == [
          .tokenRenewed(TokenRenewal(refused: reason, tokenTimeLeftMs: 0))
        ])
    }
    #expect(bench.server.table[alice.sessionID]?.tokenExpiry == wall + 100)
  }

  // MARK: - Resume (§12.10)

  /// A rejoin that names its session and proves it with `k_resume` takes the session over
  /// under the new session id and keys, from the new address: ACCEPT resumed, the same uid,
  /// and the other members see nothing.
  @Test func aResume_movesTheSessionToNewKeysAndAddress_andPeersSeeNothing() throws {
    var bench = Bench()
    var alice = Self.joined(uid: 0, in: &bench)
    var bob = Self.joined(uid: 2, host: 2, in: &bench)
    let old = alice.sessionID
    let uid = try #require(bench.server.session(cookie: old)?.uid)
    let mark = bench.sent.count
    alice.address = Bench.address(1, port: 50_000)  // a new socket after a network change
    let answers = bench.connect(&alice, Bench.channelRequest(), resume: true)
    guard case .accept(let accept)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(accept.resumed)
    #expect(accept.uid == uid)
    #expect(alice.sessionID != old)
    #expect(bench.server.session(cookie: old) == nil)
    #expect(bench.server.session(cookie: alice.sessionID)?.uid == uid)
    #expect(bench.server.table[alice.sessionID]?.address == alice.address)
    #expect(bench.server.members(of: Self.lobby) == [2, uid])
    #expect(bench.received(by: &bob, since: mark).isEmpty)
    guard
      case .heartbeatAck(1, _)? = bench.data(&alice, DevicePayloads.heartbeat(1)).first?
        .message
    else {
      Issue.record("no ACK under the new keys")
      return
    }
  }

  /// Another holder of the same shared token knows the device secret but not the session's
  /// `k_resume`: naming the session does not take it over; the join goes on as a new one.
  @Test func aResumeWithoutTheProof_makesANewSession_andTheNamedOneStays() throws {
    var bench = Bench()
    let shared = bench.token(.channel(Self.lobby, uid: 0))
    var alice = SecureDevice(token: shared, address: Bench.address(1))
    bench.connect(&alice, Bench.channelRequest())
    var mallory = SecureDevice(token: shared, address: Bench.address(9))
    let initiation = mallory.initiate(Bench.channelRequest(), forgingResumeOf: alice.sessionID)
    let answers = bench.sendUnvalidated(initiation, from: mallory.address)
    _ = try mallory.take(answers[0].bytes)
    guard case .accept(let accept)? = bench.confirm(&mallory).first?.message else {
      Issue.record("no ACCEPT")
      return
    }
    #expect(!accept.resumed)
    #expect(bench.server.members(of: Self.lobby).count == 2)
    #expect(bench.server.table[alice.sessionID]?.address == alice.address)
  }

  /// A device that was away past its grace and comes back with RELOGIN, while its user
  /// logged in elsewhere, does not take the user back: a sealed KICK REMOTE_LOGIN, as
  /// version 1 answers it.
  @Test func aRelogin_whileTheUserIsLoggedInElsewhere_getsASealedRemoteLoginKick() throws {
    var bench = Bench()
    var alice = bench.device(.user(Bench.user("alice")))
    bench.connect(&alice, Bench.loginRequest("alice"))
    var away = bench.device(.user(Bench.user("alice")), host: 2)
    let answers = bench.connect(&away, Bench.loginRequest("alice", relogin: true))
    #expect(answers.map(\.message) == [.kick(.remoteLogin)])
    #expect(bench.server.loginSession(cookie: alice.sessionID)?.userID == Bench.user("alice"))
    #expect(bench.server.loginSessionCount == 1)
  }

  /// A login resumed within its grace keeps its channels and server session.
  @Test func aLoginResume_keepsItsChannels() throws {
    var bench = Bench()
    var alice = bench.device(.user(Bench.user("alice")))
    guard
      case .loginAccept(let first)? = bench.connect(&alice, Bench.loginRequest("alice"))
        .first?.message
    else {
      Issue.record("no LOGIN_ACCEPT")
      return
    }
    _ = bench.data(
      &alice,
      DevicePayloads.channelOperation(
        session: first.session, sequence: 1, kind: .join, channel: "room"))
    let answers = bench.connect(&alice, Bench.loginRequest("alice", relogin: true), resume: true)
    guard case .loginAccept(let again)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(again.resumed)
    #expect(again.session == first.session)
    #expect(bench.server.loginSession(cookie: alice.sessionID)?.channels == [Bench.channel("room")])
    #expect(bench.server.loginSessionCount == 1)
  }
}
