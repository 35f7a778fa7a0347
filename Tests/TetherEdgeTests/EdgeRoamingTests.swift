// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// Roaming and path validation at the edge (docs/PROTOCOL.md §12.11, after RFC 9000 §9): a
/// fresh datagram of a session from a new address starts a PATH_CHALLENGE there, within the
/// bytes that address sent; the session stays where it was until the challenge comes back
/// from the new address; nothing else moves it.
struct EdgeRoamingTests {
  typealias Bench = SecureBench
  /// Alice's device behind a NAT that gave it a new port.
  static let newPort = Bench.address(1, port: 40_001)
  /// Where an attacker on the path sends from.
  static let attacker = Bench.address(66)

  /// Alice (uid 1, 10.0.0.1:40000) and Bob (uid 2) joined, events recorded from here on.
  static func twoJoined() throws -> (Bench, SecureDevice, SecureDevice) {
    let (bench, alice, bob, _) = try EdgeSecureReplayTests.twoJoined()
    return (bench, alice, bob)
  }

  /// What `device` opens of `out`, with where each went.
  static func opened(_ out: [Outgoing], by device: inout SecureDevice) -> [(
    PeerAddress, [UInt8]
  )] {
    out.compactMap { datagram in device.open(datagram.bytes).map { (datagram.address, $0) } }
  }

  /// The PATH_RESPONSE that echoes a PATH_CHALLENGE's payload.
  static func response(to challenge: [UInt8]) -> [UInt8] { [0x09] + challenge.dropFirst() }

  static func isChallenge(_ payload: [UInt8]) -> Bool {
    payload.count == 9 && payload.first == 0x8D
  }

  // MARK: - The rules, with a scripted device

  /// A fresh heartbeat from a new port: the challenge goes there at once (42 bytes for 42),
  /// the heartbeat is taken, and its ACK, like the presence digests, still goes to the old
  /// address; a wrong echo moves nothing; the right one from the new address moves the
  /// session, after which everything goes there. Bob and the log see nothing of it.
  @Test func aNewPort_isChallenged_andTheSessionMovesOnlyOnTheResponse() throws {
    var (bench, alice, bob) = try Self.twoJoined()
    let old = alice.address
    let bobMark = bench.sent.count
    let out = bench.sendUnvalidated(alice.seal(DevicePayloads.heartbeat(5)), from: Self.newPort)
    let opened = Self.opened(out, by: &alice)
    #expect(opened.count == 2 && out.count == 2)
    #expect(opened.first?.0 == Self.newPort && out.first?.bytes.count == 42)
    let challenge = try #require(opened.first?.1)
    #expect(Self.isChallenge(challenge))
    #expect(opened.last?.0 == old)
    guard case .heartbeatAck(5, _)? = opened.last.map({ EdgePayloadView(bytes: $0.1) })?.message
    else {
      Issue.record("no ACK at the old address: \(opened.map(\.1))")
      return
    }
    #expect(bench.server.table[alice.sessionID]?.address == old)
    #expect(bench.server.counters.pathChallenges == 1)
    // The presence digests still go to the old address.
    let digests = bench.advance(by: .seconds(1)).filter { alice.open($0.bytes) != nil }
    #expect(!digests.isEmpty && digests.allSatisfy { $0.address == old })

    // A wrong echo from the new address moves nothing (its challenge is sent again there).
    var wrong = Self.response(to: challenge)
    wrong[8] ^= 1
    let again = bench.sendUnvalidated(alice.seal(wrong), from: Self.newPort)
    #expect(Self.opened(again, by: &alice).map(\.1) == [challenge])
    #expect(bench.server.table[alice.sessionID]?.address == old)

    // The right echo from the new address moves the session there, and nothing is sent.
    #expect(
      bench.sendUnvalidated(alice.seal(Self.response(to: challenge)), from: Self.newPort).isEmpty)
    #expect(bench.server.table[alice.sessionID]?.address == Self.newPort)
    #expect(bench.server.front[alice.sessionID]?.address == Self.newPort)
    #expect(bench.server.counters.migrations == 1)
    alice.address = Self.newPort
    let moved = bench.data(&alice, DevicePayloads.heartbeat(6))
    #expect(moved.count == 1)
    guard case .heartbeatAck(6, _)? = moved.first?.message else {
      Issue.record("no ACK at the new address: \(moved.map(\.bytes))")
      return
    }
    let later = bench.advance(by: .seconds(1)).filter { alice.open($0.bytes) != nil }
    #expect(!later.isEmpty && later.allSatisfy { $0.address == Self.newPort })
    #expect(bench.server.counters.pathChallenges == 2)

    // Bob saw nothing but digests of two members present (no LEFT); the log has nothing.
    for view in bench.received(by: &bob, since: bobMark) {
      guard case .presence(let digest)? = view.message else { continue }
      #expect(digest.allSatisfy { $0.kind != .left }, "\(Array(digest))")
    }
    #expect(bench.server.takeEvents().isEmpty)
    #expect(bench.server.members(of: EdgeSecureReplayTests.lobby) == [1, 2])
  }

  /// The right echo from anywhere but the candidate validates nothing: from the session's
  /// own address (the device is there: the candidate is dropped), or from a third address.
  @Test func theRightEcho_fromAnotherAddress_movesNothing() throws {
    var (bench, alice, _) = try Self.twoJoined()
    let old = alice.address
    let out = bench.sendUnvalidated(alice.seal(DevicePayloads.heartbeat(5)), from: Self.newPort)
    let challenge = try #require(Self.opened(out, by: &alice).first?.1)
    let echo = Self.response(to: challenge)
    _ = bench.sendUnvalidated(alice.seal(echo), from: Self.attacker)
    #expect(bench.server.table[alice.sessionID]?.address == old)
    #expect(bench.send(alice.seal(echo), from: old).isEmpty)
    #expect(bench.server.table[alice.sessionID]?.address == old)
    #expect(bench.server.front[alice.sessionID]?.path.candidate == nil)
    // The candidate is gone: its echo from the new address now moves nothing either, and
    // starts a new challenge there (a newest datagram from a new address).
    let late = bench.sendUnvalidated(alice.seal(echo), from: Self.newPort)
    #expect(Self.opened(late, by: &alice).map { Self.isChallenge($0.1) } == [true])
    #expect(bench.server.table[alice.sessionID]?.address == old)
    #expect(bench.server.counters.migrations == 0)
  }

  /// A datagram of the device replayed from an attacker's address is a replay: it draws
  /// nothing and moves nothing. A fresh copy moved there before the device's own reaches
  /// the edge (a race the attacker won) draws one challenge no larger than itself, which
  /// only the device could answer; the device's next datagram, from its own address,
  /// cancels it.
  @Test func aReplayFromAnotherAddress_drawsNothing_andAMovedCopy_atMostItsOwnSize() throws {
    var (bench, alice, _) = try Self.twoJoined()
    let old = alice.address
    let heartbeat = alice.seal(DevicePayloads.heartbeat(5))
    #expect(bench.send(heartbeat, from: old).count == 1)
    #expect(bench.sendUnvalidated(heartbeat, from: Self.attacker).isEmpty)
    #expect(bench.server.counters.replayed == 1)
    #expect(bench.server.front[alice.sessionID]?.path.candidate == nil)

    var bytesIn = 0
    var bytesOut = 0
    for sequence in UInt32(6)...8 {
      let copy = alice.seal(DevicePayloads.heartbeat(sequence))
      let out = bench.sendUnvalidated(copy, from: Self.attacker)
      bytesIn += copy.count
      bytesOut += out.filter { $0.address == Self.attacker }.map(\.bytes.count).reduce(0, +)
      // Its content was the device's: taken, answered at the device's address.
      #expect(out.filter { $0.address == old }.count == 1)
    }
    #expect(bytesOut <= bytesIn && bytesOut > 0)
    #expect(bench.server.front[alice.sessionID]?.path.candidate?.address == Self.attacker)
    // The device's own next datagram cancels the candidate.
    #expect(bench.data(&alice, DevicePayloads.heartbeat(9)).count == 1)
    #expect(bench.server.front[alice.sessionID]?.path.candidate == nil)
    #expect(bench.server.table[alice.sessionID]?.address == old)
    #expect(bench.server.counters.migrations == 0)
  }

  /// A forged datagram with a high counter and a bad tag from a new address does not open:
  /// nothing is sent, no candidate, and the window did not move (the device's next
  /// datagrams, with their ordinary counters, are taken; one from a new port is challenged).
  @Test func aForgedHighCounter_fromANewAddress_changesNothing() throws {
    var (bench, alice, _) = try Self.twoJoined()
    let id = DevicePayloads.bigEndian(alice.sessionID, 8)
    let forged =
      [0x07] + id + DevicePayloads.bigEndian(1_000_000, 8)
      + [UInt8](repeating: 0xA5, count: 25)
    #expect(bench.sendUnvalidated(forged, from: Self.newPort).isEmpty)
    #expect(bench.server.counters.unopened == 1)
    #expect(bench.server.front[alice.sessionID]?.path.candidate == nil)
    #expect(bench.server.counters.pathChallenges == 0)
    #expect(bench.data(&alice, DevicePayloads.heartbeat(5)).count == 1)
    let out = bench.sendUnvalidated(alice.seal(DevicePayloads.heartbeat(6)), from: Self.newPort)
    #expect(Self.opened(out, by: &alice).count == 2)
    #expect(bench.server.counters.pathChallenges == 1)
  }

  /// Two candidates: a copy moved to the attacker's address, then the device's own newer
  /// datagram from its new port. The newer challenge replaces the first: the echo of the
  /// first validates nothing, the echo of the newer one moves the session to the new port.
  @Test func twoCandidates_theNewerChallengeWins() throws {
    var (bench, alice, _) = try Self.twoJoined()
    let first = bench.sendUnvalidated(
      alice.seal(DevicePayloads.heartbeat(5)), from: Self.attacker)
    let stale = try #require(Self.opened(first, by: &alice).first { $0.0 == Self.attacker }?.1)
    let second = bench.sendUnvalidated(
      alice.seal(DevicePayloads.heartbeat(6)), from: Self.newPort)
    let fresh = try #require(Self.opened(second, by: &alice).first { $0.0 == Self.newPort }?.1)
    #expect(Self.isChallenge(stale) && Self.isChallenge(fresh) && stale != fresh)
    #expect(bench.server.front[alice.sessionID]?.path.candidate?.address == Self.newPort)
    // The first challenge's echo, even from the new port, moves nothing.
    _ = bench.sendUnvalidated(alice.seal(Self.response(to: stale)), from: Self.newPort)
    #expect(bench.server.table[alice.sessionID]?.address == alice.address)
    _ = bench.sendUnvalidated(alice.seal(Self.response(to: fresh)), from: Self.newPort)
    #expect(bench.server.table[alice.sessionID]?.address == Self.newPort)
    #expect(bench.server.counters.migrations == 1)
  }

  /// The login profile under the same rules: a CHANNEL_OPERATION from a new port is
  /// applied and acknowledged at the old address while the challenge goes to the new one;
  /// after the echo, Bob joining the channel reaches Alice (MEMBER_EVENTS) at the new port.
  @Test func aLoginSession_roamsTheSameWay() throws {
    var bench = Bench()
    var alice = bench.device(.user(Bench.user("alice")))
    guard
      case .loginAccept(let accept)? = bench.connect(&alice, Bench.loginRequest("alice"))
        .first?.message
    else {
      Issue.record("no LOGIN_ACCEPT")
      return
    }
    let old = alice.address
    let join = DevicePayloads.channelOperation(
      session: accept.session, sequence: 1, kind: .join, channel: "room")
    let out = bench.sendUnvalidated(alice.seal(join), from: Self.newPort)
    let opened = Self.opened(out, by: &alice)
    #expect(opened.map(\.0) == [Self.newPort, old])
    let challenge = try #require(opened.first?.1)
    #expect(Self.isChallenge(challenge))
    #expect(
      EdgePayloadView(bytes: opened.last?.1 ?? []).message
        == .channelAck(session: accept.session, sequence: 1))
    #expect(bench.server.loginSession(cookie: alice.sessionID)?.channels == [Bench.channel("room")])
    #expect(bench.server.table[alice.sessionID]?.address == old)

    _ = bench.sendUnvalidated(alice.seal(Self.response(to: challenge)), from: Self.newPort)
    #expect(bench.server.table[alice.sessionID]?.address == Self.newPort)
    var bob = bench.device(.user(Bench.user("bob")), host: 2)
    guard
      case .loginAccept(let bobs)? = bench.connect(&bob, Bench.loginRequest("bob")).first?.message
    else {
      Issue.record("no LOGIN_ACCEPT for Bob")
      return
    }
    let mark = bench.sent.count
    _ = bench.data(
      &bob,
      DevicePayloads.channelOperation(
        session: bobs.session, sequence: 1, kind: .join, channel: "room"))
    let toAlice = bench.sent[mark...].filter { alice.open($0.bytes) != nil || $0.address == old }
    #expect(!toAlice.isEmpty && toAlice.allSatisfy { $0.address == Self.newPort })
  }

  /// An ended session (its KICK still repeated) does not roam: its datagram from another
  /// address is counted and dropped, with nothing sent there.
  @Test func anEndedSession_doesNotRoam() throws {
    var (bench, alice, _) = try Self.twoJoined()
    var usurper = bench.device(.channel(EdgeSecureReplayTests.lobby, uid: 1), host: 3)
    bench.connect(&usurper, Bench.channelRequest(uid: 1))  // takes uid 1: Alice is kicked
    #expect(bench.server.front.holds(alice.sessionID))
    let out = bench.sendUnvalidated(alice.seal(DevicePayloads.heartbeat(5)), from: Self.newPort)
    #expect(out.isEmpty)
    #expect(bench.server.counters.wrongAddress == 1)
    #expect(bench.server.counters.pathChallenges == 0)
  }

  // MARK: - NAT rebinding of real devices (SecureLink), both profiles

  typealias Device<Session: LinkSession> = SecureInteropTests.Device<Session>

  /// `devices` and the edge run for `interval` in steps of 100 ms: each device's timers,
  /// the edge's, and every datagram carried to whichever device is at its address (none
  /// is at an address a device left: its NAT mapping is gone).
  static func run<S: LinkSession>(
    _ devices: inout [Device<S>], _ bench: inout Bench, for interval: Interval
  ) {
    let end = bench.now + interval
    while bench.now < end {
      for out in bench.advance(by: .milliseconds(100)) {
        guard let to = devices.firstIndex(where: { $0.address == out.address }) else { continue }
        let answers = devices[to].deliver(out.bytes, now: bench.now)
        SecureInteropTests.exchange(answers, from: to, devices: &devices, bench: &bench)
      }
      for index in devices.indices {
        let sent = devices[index].call(now: bench.now) { session, output, now in
          session.advance(to: now, into: &output)
        }
        SecureInteropTests.exchange(sent, from: index, devices: &devices, bench: &bench)
      }
    }
  }

  /// `device` after its NAT gave it `address`: the same session and layer.
  static func rebound<S: LinkSession>(_ device: Device<S>, to address: PeerAddress) -> Device<S> {
    Device(
      session: device.session, link: device.link, output: device.output, notes: device.notes,
      address: address, sent: device.sent)
  }

  /// Two channel devices joined over version 2; Alice's NAT gives her a new port. Her next
  /// heartbeat is challenged there, her layer answers, the session moves: her session never
  /// notices (no callback, still connected), Bob's sees nothing, and her heartbeats are
  /// answered at the new port from then on.
  @Test func natRebinding_ofAChannelDevice_keepsTheSession_unseen() throws {
    var bench = try SecureBench()
    var devices = [
      try SecureInteropTests.channelDevice(host: 1, seed: 1),
      try SecureInteropTests.channelDevice(host: 2, seed: 2),
    ]
    let room = SecureBench.channel("room")
    for (index, uid) in [(0, UInt32(11)), (1, UInt32(12))] {
      let token = try Token(validating: Array(bench.token(.channel(room, uid: uid)).utf8))
      let first = try devices[index].call(now: bench.now) { session, output, now in
        try session.join(token: token, channel: room, uid: uid, now: now, into: &output)
      }
      SecureInteropTests.exchange(first, from: index, devices: &devices, bench: &bench)
    }
    Self.run(&devices, &bench, for: .seconds(3))
    #expect(devices.allSatisfy { $0.session.state == .connected })
    let notes = devices.map(\.notes)
    let dropped = devices[0].link.dropped
    let id = try #require(
      bench.server.table.records.keys.first { bench.server.session(cookie: $0)?.uid == 11 })

    devices[0] = Self.rebound(devices[0], to: Self.newPort)
    Self.run(&devices, &bench, for: .seconds(6))
    #expect(bench.server.table[id]?.address == Self.newPort)
    #expect(bench.server.counters.migrations == 1)
    #expect(devices.map(\.notes) == notes)
    #expect(devices.allSatisfy { $0.session.state == .connected })
    #expect(devices[0].link.unopened == 0)
    // Nothing dropped: the challenges it answered are the layer's own, not drops.
    #expect(devices[0].link.dropped == dropped)
    // Answers reach the new port: the edge's datagrams there after the move open.
    let there = bench.sent.filter { $0.address == Self.newPort }
    #expect(there.count > 5)
  }

  /// The same for two login devices sharing a channel: Alice's new port is validated, her
  /// session moves, and neither her session nor Bob's reports anything.
  @Test func natRebinding_ofALoginDevice_keepsTheSession_unseen() throws {
    var bench = try SecureBench()
    var devices = try [(UInt8(1), "alice"), (UInt8(2), "bob")].map { host, _ in
      Device(
        session: try LoginSession(
          config: LoginConfig(appID: Fixture.appID), random: SeededRandom(seed: UInt64(host))),
        address: SecureBench.address(host))
    }
    let room = SecureBench.channel("room")
    for (index, name) in ["alice", "bob"].enumerated() {
      let user = SecureBench.user(name)
      let token = try Token(validating: Array(bench.token(.user(user)).utf8))
      let first = try devices[index].call(now: bench.now) { session, output, now in
        try session.login(token: token, userID: user, now: now, into: &output)
        try session.joinChannel(room, now: now, into: &output)
      }
      SecureInteropTests.exchange(first, from: index, devices: &devices, bench: &bench)
    }
    Self.run(&devices, &bench, for: .seconds(3))
    #expect(devices[0].notes.contains(.loginResult(.ok)))
    #expect(bench.server.loginMembers(of: room).count == 2)
    let notes = devices.map(\.notes)
    let dropped = devices[0].link.dropped
    let id = try #require(
      bench.server.table.records.keys.first {
        bench.server.loginSession(cookie: $0)?.userID == SecureBench.user("alice")
      })

    devices[0] = Self.rebound(devices[0], to: Self.newPort)
    Self.run(&devices, &bench, for: .seconds(6))
    #expect(bench.server.table[id]?.address == Self.newPort)
    #expect(bench.server.counters.migrations == 1)
    #expect(devices.map(\.notes) == notes)
    #expect(devices[0].link.unopened == 0)
    // Nothing dropped: the challenges it answered are the layer's own, not drops.
    #expect(devices[0].link.dropped == dropped)
    #expect(bench.server.loginMembers(of: room).count == 2)
  }
}
