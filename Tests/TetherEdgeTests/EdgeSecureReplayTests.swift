// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// What the path can do to version 2 at the edge (docs/PROTOCOL.md §12.6, §12.7): replay
/// an INIT or a CONFIRM, move a CONFIRM to another address, flip bits. None of it makes a
/// session, a JOINED, a takeover, or more bytes out than in to an address not validated.
struct EdgeSecureReplayTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  /// Alice (uid 1) and Bob (uid 2) joined, events recorded from here on.
  static func twoJoined() throws -> (Bench, SecureDevice, SecureDevice, [UInt8]) {
    var config = try EdgeConfig(appID: Fixture.appID, appCertificate: World.certificate)
    config.recordsEvents = true
    var bench = Bench(config: config)
    var alice = bench.device(.channel(Self.lobby, uid: 1))
    let aliceInit = alice.initiate(Bench.channelRequest(uid: 1))
    let response = bench.sendUnvalidated(aliceInit, from: alice.address)
    _ = try alice.take(response[0].bytes)
    #expect(bench.confirm(&alice).first?.type == 0x81)
    var bob = bench.device(.channel(Self.lobby, uid: 2), host: 2)
    bench.connect(&bob, Bench.channelRequest(uid: 2))
    _ = bench.server.takeEvents()
    return (bench, alice, bob, aliceInit)
  }

  @Test func aReplayedInit_getsAResponseNoLargerThanIt_andMakesNothing() throws {
    var (bench, alice, bob, aliceInit) = try Self.twoJoined()
    let mark = bench.sent.count
    for source in [alice.address, Bench.address(7)] {
      let answers = bench.sendUnvalidated(aliceInit, from: source)
      #expect(answers.map(\.bytes.count) == [269])
    }
    // Only the device's own handshake could confirm it, and that one is over.
    #expect(throws: HandshakeError.self) { try alice.take(bench.sent[mark].bytes) }
    #expect(bench.server.members(of: Self.lobby) == [1, 2])
    #expect(bench.server.takeEvents().isEmpty)
    #expect(bench.received(by: &bob, since: mark).isEmpty)
  }

  @Test func aReplayedConfirm_whileHeld_getsTheAcceptSealedAfresh_andNothingElse() throws {
    var (bench, alice, bob, _) = try Self.twoJoined()
    let firstAccept = bench.sent[1].bytes
    let mark = bench.sent.count
    let again = bench.confirm(&alice)
    guard case .accept(let accept)? = again.first?.message else {
      Issue.record("\(again.map(\.bytes))")
      return
    }
    #expect(accept.uid == 1)
    // A new counter, so new bytes: never a stored datagram sent twice.
    #expect(bench.sent[mark].bytes != firstAccept)
    #expect(bench.sent[mark].bytes.count == firstAccept.count)
    #expect(bench.server.members(of: Self.lobby) == [1, 2])
    #expect(bench.server.takeEvents().isEmpty)
    #expect(bench.received(by: &bob, since: mark).isEmpty)
  }

  @Test func aReplayedConfirm_afterALeave_makesNothing() throws {
    var (bench, alice, bob, _) = try Self.twoJoined()
    _ = bench.data(&alice, DevicePayloads.leave)
    _ = bench.server.takeEvents()
    let mark = bench.sent.count
    #expect(bench.send(alice.confirm!.bytes, from: alice.address).isEmpty)
    #expect(bench.server.members(of: Self.lobby) == [2])
    #expect(bench.server.takeEvents().isEmpty)
    #expect(bench.received(by: &bob, since: mark).isEmpty)
    #expect(bench.server.counters.confirmsReplayed == 1)
  }

  @Test func aConfirmFromAnotherAddress_isDropped_andTheRealOneStillJoins() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    bench.handshake(&device, Bench.channelRequest())
    for source in [Bench.address(2), Bench.address(1, port: 40_001)] {
      #expect(bench.sendUnvalidated(device.confirm!.bytes, from: source).isEmpty)
    }
    #expect(bench.server.sessionCount == 0)
    #expect(bench.server.counters.wrongAddress == 2)
    #expect(bench.confirm(&device).first?.type == 0x81)
  }

  @Test func aConfirm_afterItsTicketExpired_isDropped() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    bench.handshake(&device, Bench.channelRequest())
    _ = bench.advance(by: bench.config.ticketLifetime)
    #expect(bench.sendUnvalidated(device.confirm!.bytes, from: device.address).isEmpty)
    #expect(bench.server.sessionCount == 0)
    #expect(bench.server.counters.staleTickets == 1)
  }

  @Test func everyBitFlippedConfirm_isDropped() throws {
    var bench = Bench()
    var device = bench.device(.channel(Self.lobby, uid: 0))
    bench.handshake(&device, Bench.channelRequest())
    let confirm = device.confirm!.bytes
    HandshakeTests.forEachBitFlip(of: confirm) { _, flipped in
      #expect(bench.sendUnvalidated(Array(flipped), from: device.address).isEmpty)
    }
    #expect(bench.server.sessionCount == 0)
    #expect(bench.confirm(&device).first?.type == 0x81)
  }

  /// A DATA datagram with any bit flipped changes nothing: not the session, not its window
  /// (the genuine one after it is taken), and gets no answer.
  @Test func everyBitFlippedData_changesNothing() throws {
    var (bench, alice, _, _) = try Self.twoJoined()
    bench.now = bench.now + .seconds(1)
    let heartbeat = alice.seal(DevicePayloads.heartbeat(9))
    let heardBefore = bench.server.table[alice.sessionID]?.lastHeard
    HandshakeTests.forEachBitFlip(of: heartbeat) { bit, flipped in
      // A flip in the epoch names a session of another start of the edge: its RESET (25
      // bytes) is not Alice's, which she does not take. Nothing else is answered.
      let out = bench.sendUnvalidated(Array(flipped), from: alice.address)
      #expect(out.allSatisfy { !alice.acceptsReset($0.bytes) })
      #expect(out.isEmpty || (8..<40).contains(bit), "bit \(bit)")
    }
    #expect(bench.server.table[alice.sessionID]?.lastHeard == heardBefore)
    #expect(bench.server.counters.unopened > 0)
    let out = bench.send(heartbeat, from: alice.address)
    guard
      case .heartbeatAck(9, _)? = out.first.flatMap({ alice.open($0.bytes) }).map(
        EdgePayloadView.init)?.message
    else {
      Issue.record("\(out)")
      return
    }
    // The same datagram again is a replay: dropped, counted.
    #expect(bench.send(heartbeat, from: alice.address).isEmpty)
    #expect(bench.server.counters.replayed == 1)
  }

  /// A DATA datagram that opens but comes from another address moves nothing: it is taken
  /// (answered at the session's own address) and draws one PATH_CHALLENGE there, no larger
  /// than itself, which only the device can answer (§12.11; EdgeRoamingTests has the rest).
  @Test func aDataDatagramMovedToAnotherAddress_movesNothing() throws {
    var (bench, alice, _, _) = try Self.twoJoined()
    let heartbeat = alice.seal(DevicePayloads.heartbeat(3))
    let out = bench.sendUnvalidated(heartbeat, from: Bench.address(9))
    #expect(out.map(\.address) == [Bench.address(9), alice.address])
    #expect(out.first.flatMap { alice.open($0.bytes) }?.first == 0x8D)
    #expect(bench.server.table[alice.sessionID]?.address == alice.address)
    #expect(bench.server.counters.pathChallenges == 1)
    #expect(bench.server.counters.migrations == 0)
  }
}
