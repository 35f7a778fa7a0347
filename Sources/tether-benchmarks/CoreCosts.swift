// SPDX-License-Identifier: Apache-2.0
import CBenchSupport
import Foundation
import TetherCore

#if canImport(Glibc)
  import Glibc
#endif

/// What the core costs on its own, in a release build: per packet (the session's work for
/// a heartbeat ack, decoded or from bytes) and per session in memory.
struct CoreCosts {
  var refreshNanoseconds = 0.0
  var datagramNanoseconds = 0.0
  var bytesPerSession = 0.0
  var inlineBytesPerSession = 0
  var sessions = 0

  static func measure(iterations: Int, sessions: Int) -> CoreCosts {
    var costs = CoreCosts()
    (costs.refreshNanoseconds, costs.datagramNanoseconds) = perPacket(iterations: iterations)
    costs.bytesPerSession = bytesPerSession(count: sessions)
    costs.inlineBytesPerSession = MemoryLayout<ChannelSession<SystemRandomNumberGenerator>>.size
    costs.sessions = sessions
    return costs
  }

  /// A session joined and accepted at `now`, and the cookie it chose.
  static func connectedSession(now: Instant)
    -> (ChannelSession<SystemRandomNumberGenerator>, UInt64)
  {
    let appID = try! AppID(validating: Array("bench-app".utf8))
    let channel = try! ChannelName(validating: Array("bench".utf8))
    var session = try! ChannelSession(
      config: ChannelConfig(appID: appID), random: SystemRandomNumberGenerator())
    var output = ChannelOutput()
    try! session.join(
      token: try! Token(validating: []), channel: channel, uid: 7, now: now, into: &output)
    let cookie = (try? Packet.decode(output.datagrams[0]))?.cookie ?? 0
    let accept = JoinAccept(uid: 7, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false)
    session.receive(Packet(cookie: cookie, message: .accept(accept)), now: now, into: &output)
    return (session, cookie)
  }

  /// Nanoseconds per heartbeat ack taken by a connected session: decoded (the activity
  /// refresh: the time is written, the deadlines are looked at) and from its bytes.
  static func perPacket(iterations: Int) -> (refresh: Double, datagram: Double) {
    var (session, cookie) = connectedSession(now: .zero)
    var output = ChannelOutput()
    let ack = Packet(cookie: cookie, message: .heartbeatAck(sequence: 1, serverTimeMs: 0))
    var bytes: [UInt8] = []
    ack.encode(into: &bytes)
    // 10 ns of virtual time per packet: no deadline falls due during the run.
    var now = Instant(nanoseconds: 1_000)
    let step = Interval(nanoseconds: 10)
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<iterations {
      now = now + step
      session.receive(ack, now: now, into: &output)
    }
    let middle = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<iterations {
      now = now + step
      session.receive(datagram: bytes[...], now: now, into: &output)
    }
    let end = DispatchTime.now().uptimeNanoseconds
    precondition(session.state == .connected && output.actions.isEmpty)
    return (
      Double(middle - start) / Double(iterations), Double(end - middle) / Double(iterations)
    )
  }

  /// Heap and inline bytes per connected session, with `count` of them held at once.
  static func bytesPerSession(count: Int) -> Double {
    let before = tether_bench_heap_in_use()
    var sessions: [ChannelSession<SystemRandomNumberGenerator>] = []
    sessions.reserveCapacity(count)
    for _ in 0..<count { sessions.append(connectedSession(now: .zero).0) }
    let after = tether_bench_heap_in_use()
    withExtendedLifetime(sessions) {}
    return Double(after - before) / Double(count)
  }
}
