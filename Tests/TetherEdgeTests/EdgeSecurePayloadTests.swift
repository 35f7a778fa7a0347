// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The DATA payloads of docs/PROTOCOL.md §12.7 at the edge: device payloads read strictly,
/// and edge payloads that fit one datagram of at most 1,200 bytes.
struct EdgeSecurePayloadTests {
  @Test func devicePayloads_areReadStrictly() {
    #expect(
      DevicePayload(decoding: DevicePayloads.heartbeat(5)[...])
        == .message(.heartbeat(sequence: 5)))
    #expect(DevicePayload(decoding: DevicePayloads.leave[...]) == .message(.leave))
    #expect(DevicePayload(decoding: DevicePayloads.logout[...]) == .message(.logout))
    let operation = DevicePayloads.channelOperation(
      session: 3, sequence: 4, kind: .leave, channel: "room")
    #expect(
      DevicePayload(decoding: operation[...])
        == .message(
          .channelOperation(
            ChannelOperation(
              session: 3, sequence: 4, kind: .leave, channel: SecureBench.channel("room")))))
    // Padding that is not zeros, a size off by one, a name past its length, a kind the edge
    // sends: none is a payload.
    var padded = DevicePayloads.heartbeat(5)
    padded[8] = 1
    var name = operation
    name[73] = 0x41
    for bad in [
      padded, DevicePayloads.leave + [0], Array(DevicePayloads.leave.dropLast()), name,
      [0x81] + [UInt8](repeating: 0, count: 8), [],
    ] {
      #expect(DevicePayload(decoding: bad[...]) == nil, "\(bad)")
    }
  }

  /// A channel of 132: its digest takes more than one DATA datagram; a member gets it
  /// split, each datagram at most 1,200 bytes, and every entry.
  @Test func aLargeDigest_isSplitToFit() throws {
    var bench = SecureBench()
    let lobby = SecureBench.channel("lobby")
    for uid in UInt32(1)...131 {
      var member = bench.device(
        .channel(lobby, uid: uid), host: UInt8(uid & 0xFF), port: 40_000 + UInt16(uid))
      bench.connect(&member, SecureBench.channelRequest(uid: uid))
    }
    #expect(bench.server.members(of: lobby).count == 131)
    var device = bench.device(.channel(lobby, uid: 500))
    bench.connect(&device, SecureBench.channelRequest(uid: 500))
    let mark = bench.sent.count
    _ = bench.advance(by: .seconds(1))
    let mine = bench.sent[mark...].filter { $0.address == device.address }
    #expect(mine.allSatisfy { $0.bytes.count <= Packet.maximumSize })
    var uids: [UInt32] = []
    for datagram in mine {
      guard let payload = device.open(datagram.bytes),
        case .presence(let digest)? = EdgePayloadView(bytes: payload).message
      else {
        Issue.record("not a PRESENCE")
        continue
      }
      uids += digest.map(\.uid)
    }
    #expect(uids == Array(1...131) + [500])
    #expect(mine.count == 3)
  }

  @Test func memberEvents_areSplitToFit_numberedOn() throws {
    let user = try UserID(validating: Array(String(repeating: "u", count: 64).utf8))
    let channel = try ChannelName(validating: Array(String(repeating: "c", count: 63).utf8))
    // 130 bytes an entry: 9 fit version 1's 1,179 bytes, 8 version 2's 1,157.
    let entries = Array(
      repeating: MemberEvent.Entry(kind: .joined, channel: channel, userID: user), count: 9)
    let batch = try MemberEvents(session: 7, firstSequence: 20, entries: entries)
    let split = EdgePayload.split(batch)
    #expect(split.map(\.firstSequence) == [20, 28])
    #expect(split.map(\.count) == [8, 1])
    #expect(split.allSatisfy { $0.session == 7 })
    let payloads = EdgePayload.payloads(of: .memberEvents(batch), resetValue: [])
    #expect(payloads.allSatisfy { $0.count <= EdgePayload.capacity })
    #expect(EdgePayload.payloads(of: .memberEvents(split[1]), resetValue: []).count == 1)
  }
}
