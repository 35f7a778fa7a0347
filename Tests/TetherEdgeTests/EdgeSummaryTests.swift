// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The summary `tether-edge serve --print-counters` prints at stop: version 1's line as it
/// was, and version 2's counts (docs/PROTOCOL.md §12), each counted where it happens.
struct EdgeSummaryTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  /// One of each thing version 2 counts, then the line that reports them.
  @Test func versionTwosCounts_areCountedAndPrinted() throws {
    var bench = Bench()
    var alice = bench.device(.channel(Self.lobby, uid: 1))
    bench.connect(&alice, Bench.channelRequest(uid: 1))  // a RESPONSE: answered
    // A token of another certificate: REFUSE_CLEAR, and its token did not open.
    let other = try TokenMinter(certificate: Array("not this edge's".utf8))
    var stranger = SecureDevice(
      token: other.mint(appID: Fixture.appID, grant: .channel(Self.lobby, uid: 2), expiresAt: 0),
      address: Bench.address(2))
    _ = bench.sendUnvalidated(
      stranger.initiate(Bench.channelRequest(uid: 2)), from: stranger.address)
    // DATA: a replay, a flipped tag, a datagram too short, one of a session of another start.
    let heartbeat = alice.seal(DevicePayloads.heartbeat(1))
    #expect(bench.send(heartbeat, from: alice.address).count == 1)
    #expect(bench.send(heartbeat, from: alice.address).isEmpty)
    var flipped = alice.seal(DevicePayloads.heartbeat(2))
    flipped[flipped.count - 1] ^= 1
    #expect(bench.send(flipped, from: alice.address).isEmpty)
    #expect(bench.send([0x07] + [UInt8](repeating: 0, count: 40), from: alice.address).isEmpty)
    let otherStart = SessionID(epoch: bench.server.front.issuer.epoch &+ 1, serial: 1)
    let reset = bench.send(
      [0x07] + otherStart.bytes + [UInt8](repeating: 0, count: 33), from: Bench.address(3))
    #expect(reset.map(\.bytes.count) == [25])
    // Roaming: a challenge at a new port, its echo, the move.
    let newPort = Bench.address(1, port: 40_001)
    let out = bench.sendUnvalidated(alice.seal(DevicePayloads.heartbeat(3)), from: newPort)
    let challenge = try #require(out.first.flatMap { alice.open($0.bytes) })
    _ = bench.sendUnvalidated(alice.seal([0x09] + challenge.dropFirst()), from: newPort)
    // A version 1 heartbeat: dropped.
    #expect(
      bench.send(
        Packet(cookie: 77, message: .heartbeat(sequence: 1)).encoded, from: Bench.address(4)) == [])

    let c = bench.server.counters
    #expect(c.handshakesAnswered == 1 && c.refusedHandshakes == 1)
    #expect(c.unopened == 2 && c.replayed == 1)
    #expect(c.dataDropped == 2 && c.resets == 1)
    #expect(c.pathChallenges == 1 && c.migrations == 1 && c.versionOneDropped == 1)
    let summary = EdgeSummary(counters: c, tables: bench.server.tableCounts, sendFailures: 0)
    #expect(
      summary.versionTwoLine
        == "v2 handshakes 1 cookie-replies 0 refused-handshakes 1 stale-tickets 0"
        + " confirms-replayed 0 unopened 2 replayed 1 data-dropped 2 resets 1"
        + " path-challenges 1 migrations 1 random-shortfalls 0 v1-dropped 1")
    #expect(summary.lines.count == 3)
    #expect(summary.lines[0] == summary.counterLine && summary.lines[1] == summary.versionTwoLine)
    #expect(summary.lines[2].hasPrefix("tables sessions 1 "))
  }

  /// Under load (a handshake rate of 1), the second INIT gets a COOKIE_REPLY, counted; the
  /// device's INIT again with the cookie is answered.
  @Test func cookieReplies_areCounted() throws {
    var bench = try Bench(handshakeRate: 1)
    var alice = bench.device(.channel(Self.lobby, uid: 1))
    bench.connect(&alice, Bench.channelRequest(uid: 1))
    var bob = bench.device(.channel(Self.lobby, uid: 2), host: 2)
    let reply = bench.sendUnvalidated(bob.initiate(Bench.channelRequest(uid: 2)), from: bob.address)
    #expect(reply.map(\.bytes.count) == [73])
    guard case .cookie? = try? bob.take(reply[0].bytes) else {
      Issue.record("no cookie")
      return
    }
    bench.connect(&bob, Bench.channelRequest(uid: 2))
    #expect(bench.server.counters.cookieReplies == 1)
    #expect(bench.server.counters.handshakesAnswered == 2)
    #expect(
      EdgeSummary(
        counters: bench.server.counters, tables: bench.server.tableCounts, sendFailures: 0
      )
      .versionTwoLine.hasPrefix("v2 handshakes 2 cookie-replies 1 "))
  }

  /// The first line is what it always was: the end-to-end tests and scripts read it.
  @Test func theCounterLine_keepsVersionOnesFormat() {
    var counters = EdgeCounters()
    counters.malformed = 3
    counters.wrongAddress = 2
    let line = EdgeSummary(
      counters: counters,
      tables: EdgeServer(config: World.config(), crypto: SimCrypto(seed: 1)).tableCounts,
      sendFailures: 5, receiveDrops: 9
    ).counterLine
    #expect(
      line
        == "counters malformed 3 unexpected 0 unknown-session 0 wrong-address 2"
        + " refused-joins 0 joins-limited 0 admin-refused 0 send-failures 5"
        + " refused-logins 0 operations-unordered 0 operations-over-limit 0"
        + " events-resent 0 event-overflows 0 receive-drops 9")
  }
}
