// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSim

/// `tether-sim steady N`: the allocation probe. N rounds of a joined session's steady state
/// (a heartbeat sent, its ack and a presence digest of three members received), and nothing
/// printed. Run it under `valgrind` with two values of N (scripts/check/alloc-probe.sh, `make
/// alloc-check`): the difference in heap allocations, divided by the difference in rounds,
/// is the allocation cost per round.
enum SteadyMode {
  /// N, when `arguments` are `tether-sim steady N`.
  static func rounds(_ arguments: [String]) -> Int? {
    guard arguments.count == 3, arguments[1] == "steady" else { return nil }
    return Int(arguments[2])
  }

  /// 0 when the session stayed connected and sent at least one datagram a round; 2 when
  /// the join could not be set up, 3 when a round went wrong.
  static func main(rounds: Int) throws -> Int32 {
    var session = try ChannelSession(
      config: ChannelConfig(appID: Fixture.appID), random: SeededRandom(seed: 1))
    var output = ChannelOutput()
    var now = Instant.s(1)
    try session.join(
      token: Fixture.token, channel: Fixture.channel, uid: 1, now: now, into: &output)
    let join = output.actions.lazy.compactMap { if case .send(let d) = $0 { d } else { nil } }
      .first
    guard let join, let cookie = try? Packet.decode(output.bytes(of: join)).cookie else {
      return 2
    }
    let accept = Packet(
      cookie: cookie,
      message: .accept(JoinAccept(uid: 1, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false))
    ).encoded
    let ack = Packet(cookie: cookie, message: .heartbeatAck(sequence: 1, serverTimeMs: 0)).encoded
    let digest = Packet(
      cookie: cookie,
      message: .presence(
        try PresenceDigest((2...4).map { PresenceEntry(uid: $0, kind: .alive, silentForMs: 10) }))
    )
    .encoded
    output.removeAll()
    session.receive(datagram: accept[...], now: now, into: &output)
    var sent = 0
    for _ in 0..<rounds {
      // Up to the next heartbeat (member checks may fall due on the way).
      for _ in 0..<4 {
        output.removeAll()
        now = session.nextDeadline ?? now
        session.advance(to: now, into: &output)
        if output.actionCount != 0 { break }
      }
      sent += output.actionCount
      output.removeAll()
      session.receive(datagram: ack[...], now: now + .milliseconds(1), into: &output)
      session.receive(datagram: digest[...], now: now + .milliseconds(2), into: &output)
    }
    guard session.state == .connected, sent >= rounds else {
      print("steady: state \(session.state), \(sent) actions in \(rounds) rounds")
      return 3
    }
    return 0
  }
}
