// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// Many sessions from one address and port: what a device process whose sessions share one
/// socket per loop and server (the driver's shared socket, docs/DESIGN.md) looks like to the
/// edge. The edge keys every session by its session id, never by its address: each joins,
/// hears only its own answers, leaves alone, and moves alone when the socket gets a new
/// port (each by its own challenge, within the bytes it sent itself); the join budget is
/// the host's, as for sessions on many ports of it.
struct EdgeSharedAddressTests {
  typealias Bench = SecureBench
  /// The shared socket's address, and the port a network change gives it.
  static let shared = Bench.address(1)
  static let moved = Bench.address(1, port: 40_001)
  static let lobby = Bench.channel("lobby")

  /// `count` devices at ``shared``, uid 1 … `count`, joined.
  static func joined(_ count: Int, on bench: inout Bench) -> [SecureDevice] {
    (1...count).map { uid in
      var device = bench.device(.channel(lobby, uid: UInt32(uid)))
      let accept = bench.connect(&device, Bench.channelRequest(uid: UInt32(uid))).first
      #expect(accept?.type == 0x81, "uid \(uid)")
      return device
    }
  }

  /// Which of `devices` open each of `out`'s datagrams (its index, or nil when none does).
  static func openers(_ out: [Outgoing], _ devices: inout [SecureDevice]) -> [[Int]] {
    out.map { datagram in
      devices.indices.filter { devices[$0].open(datagram.bytes) != nil }
    }
  }

  @Test func sessionsOfOneAddressAndPort_eachJoin_andHearOnlyTheirOwnAnswers() {
    var bench = Bench()
    var devices = Self.joined(40, on: &bench)
    #expect(bench.server.sessionCount == 40)
    #expect(Set(devices.map(\.sessionID)).count == 40)
    #expect(devices.allSatisfy { bench.server.table[$0.sessionID]?.address == Self.shared })
    for index in devices.indices {
      let out = bench.send(devices[index].seal(DevicePayloads.heartbeat(7)), from: Self.shared)
      let acks = out.filter { datagram in
        var device = devices[index]
        return device.open(datagram.bytes).map { EdgePayloadView(bytes: $0).type } == 0x83
      }
      #expect(acks.count == 1, "device \(index)")
      // The ACK opens for its own session alone (each opens a datagram once: open a copy).
      var others = devices
      others.remove(at: index)
      #expect(Self.openers(acks, &others) == [[]])
    }
    #expect(bench.server.counters.wrongAddress == 0)
  }

  @Test func oneSessionLeaving_endsOnlyItsOwn() {
    var bench = Bench()
    var devices = Self.joined(10, on: &bench)
    _ = bench.data(&devices[3], DevicePayloads.leave)
    #expect(bench.server.sessionCount == 9)
    #expect(bench.server.table[devices[3].sessionID] == nil)
    for index in devices.indices where index != 3 {
      let answers = bench.data(&devices[index], DevicePayloads.heartbeat(9))
      #expect(answers.contains { $0.type == 0x83 }, "device \(index)")
    }
    #expect(bench.server.members(of: Self.lobby).count == 9)
  }

  /// The socket moved to a new port (a network change): each session's next datagram from
  /// there draws its own challenge, no larger than that datagram, while its answers still go
  /// to the old port; each echo moves its own session only.
  @Test func theSocketMovingToANewPort_movesEachSessionByItsOwnChallenge() {
    var bench = Bench()
    var devices = Self.joined(12, on: &bench)
    var challenges: [[UInt8]] = []
    for index in devices.indices {
      let out = bench.sendUnvalidated(
        devices[index].seal(DevicePayloads.heartbeat(3)), from: Self.moved)
      let toNewPort = out.filter { $0.address == Self.moved }
      #expect(toNewPort.count == 1 && toNewPort.first?.bytes.count == 42)
      let challenge = toNewPort.first.flatMap { devices[index].open($0.bytes) } ?? []
      #expect(EdgeRoamingTests.isChallenge(challenge), "device \(index)")
      challenges.append(challenge)
      #expect(out.contains { $0.address == Self.shared })  // the ACK, at the old port
    }
    #expect(bench.server.counters.pathChallenges == 12)
    // Half echo: those move, the others stay until they do.
    for index in devices.indices where index % 2 == 0 {
      let echo = EdgeRoamingTests.response(to: challenges[index])
      #expect(bench.sendUnvalidated(devices[index].seal(echo), from: Self.moved).isEmpty)
    }
    for index in devices.indices {
      let at = bench.server.table[devices[index].sessionID]?.address
      #expect(at == (index % 2 == 0 ? Self.moved : Self.shared), "device \(index)")
    }
    for index in devices.indices where index % 2 == 1 {
      let echo = EdgeRoamingTests.response(to: challenges[index])
      _ = bench.sendUnvalidated(devices[index].seal(echo), from: Self.moved)
    }
    #expect(devices.allSatisfy { bench.server.table[$0.sessionID]?.address == Self.moved })
    #expect(bench.server.counters.migrations == 12)
  }

  /// Sessions of one address and port join from one bucket: the host's.
  @Test func joinsFromOneAddressAndPort_takeFromTheHostsBudget() {
    var bench = EdgeJoinLimitTests.limited(burst: 3, refill: .seconds(100))
    var accepted = 0
    for _ in 0..<5 {
      var device = EdgeJoinLimitTests.handshaken(&bench, at: Self.shared)
      accepted += bench.confirm(&device).first?.type == 0x81 ? 1 : 0
    }
    #expect(accepted == 3)
    #expect(bench.server.counters.joinsLimited == 2)
    // Another port of the host shares it; another host does not.
    var sameHost = EdgeJoinLimitTests.handshaken(&bench, at: Self.moved)
    #expect(bench.confirm(&sameHost).first?.type != 0x81)
    var otherHost = EdgeJoinLimitTests.handshaken(&bench, at: Bench.address(2))
    #expect(bench.confirm(&otherHost).first?.type == 0x81)
  }
}
