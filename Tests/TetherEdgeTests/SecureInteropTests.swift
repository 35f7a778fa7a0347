// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The two halves of protocol version 2 against each other: real sessions behind the
/// device's ``SecureLink`` and the real ``EdgeServer`` with its ``SecureFront``, which were
/// written apart from the same document (docs/PROTOCOL.md §12). The other suites test each
/// half against a stand-in of the other; these show the stand-ins agree with the real thing.
struct SecureInteropTests {
  /// One device on the bench's edge: a session, its layer, its address.
  struct Device<Session: LinkSession> {
    var session: Session
    var link = SecureLink(crypto: SodiumCrypto())
    var output = SessionOutput<Session.Notification>()
    var notes: [Session.Notification] = []
    let address: PeerAddress
    /// Every datagram it sent, in order.
    var sent: [[UInt8]] = []

    /// Runs one entry point, then the layer's rewrite; returns the datagrams to send.
    mutating func call(
      now: Instant,
      _ body: (inout Session, inout SessionOutput<Session.Notification>, Instant) throws -> Void
    ) rethrows -> [[UInt8]] {
      let first = output.actions.count
      try body(&session, &output, now)
      link.secure(&output, from: first, session: &session, now: now)
      return drain()
    }

    mutating func deliver(_ datagram: [UInt8], now: Instant) -> [[UInt8]] {
      link.receive(datagram[...], session: &session, now: now, into: &output)
      return drain()
    }

    private mutating func drain() -> [[UInt8]] {
      let datagrams = output.drain(notes: &notes)
      sent += datagrams
      return datagrams
    }
  }

  /// Carries `datagrams` from `device` to the edge, and every answer back to whichever
  /// device it is addressed to, until nobody has anything more to send.
  static func exchange<S: LinkSession>(
    _ datagrams: [[UInt8]], from index: Int, devices: inout [Device<S>], bench: inout SecureBench
  ) {
    var queue = datagrams.map { (index, $0) }
    for _ in 0..<200 {
      guard !queue.isEmpty else { return }
      let (from, datagram) = queue.removeFirst()
      for answer in bench.send(datagram, from: devices[from].address) {
        guard let to = devices.firstIndex(where: { $0.address == answer.address }) else {
          continue
        }
        queue += devices[to].deliver(answer.bytes, now: bench.now).map { (to, $0) }
      }
    }
    Issue.record("the exchange did not settle")
  }

  static func channelDevice(host: UInt8, seed: UInt64) throws -> Device<
    ChannelSession<SeededRandom>
  > {
    Device(
      session: try ChannelSession(
        config: ChannelConfig(appID: Fixture.appID), random: SeededRandom(seed: seed)),
      address: SecureBench.address(host))
  }

  /// Two devices join one channel over version 2: each takes two round trips, is told it
  /// joined with the uid it asked, and sees the other join, through sealed datagrams only.
  @Test func twoChannelDevices_joinAndSeeEachOther() throws {
    var bench = SecureBench()
    var devices = [
      try Self.channelDevice(host: 1, seed: 1), try Self.channelDevice(host: 2, seed: 2),
    ]
    let room = SecureBench.channel("room")
    for (index, uid) in [(0, UInt32(11)), (1, UInt32(12))] {
      let token = try Token(
        validating: Array(bench.token(.channel(room, uid: uid)).utf8))
      let first = try devices[index].call(now: bench.now) { session, output, now in
        try session.join(token: token, channel: room, uid: uid, now: now, into: &output)
      }
      Self.exchange(first, from: index, devices: &devices, bench: &bench)
      #expect(devices[index].session.state == .connected)
      #expect(devices[index].sent.map { $0.first }.prefix(2) == [0x01, 0x03])
    }
    // Presence reaches both within a presence interval.
    for _ in 0..<30 {
      for out in bench.advance(by: .milliseconds(100)) {
        guard let to = devices.firstIndex(where: { $0.address == out.address }) else { continue }
        let answers = devices[to].deliver(out.bytes, now: bench.now)
        Self.exchange(answers, from: to, devices: &devices, bench: &bench)
      }
    }
    #expect(devices[0].notes.contains { if case .userJoined(12, _) = $0 { true } else { false } })
    #expect(devices[1].notes.contains { if case .userJoined(11, _) = $0 { true } else { false } })
    #expect(devices[0].notes.contains(.connectionStateChanged(.connected, .joinSuccess)))
    // Nothing the devices sent after their handshakes was anything but sealed DATA.
    for device in devices {
      #expect(
        device.sent.dropFirst(2).allSatisfy { $0.first == SealedData<SodiumDatagramCipher>.kind })
      #expect(device.link.unopened == 0 && device.link.replayed == 0)
    }
  }

  /// A login over version 2 against the real edge reports OK.
  @Test func aLogin_succeeds() throws {
    var bench = SecureBench()
    var devices = [
      Device(
        session: try LoginSession(
          config: LoginConfig(appID: Fixture.appID), random: SeededRandom(seed: 3)),
        address: SecureBench.address(3))
    ]
    let user = SecureBench.user("alice")
    let token = try Token(validating: Array(bench.token(.user(user)).utf8))
    let first = try devices[0].call(now: bench.now) { session, output, now in
      try session.login(token: token, userID: user, now: now, into: &output)
    }
    Self.exchange(first, from: 0, devices: &devices, bench: &bench)
    #expect(devices[0].notes.contains(.loginResult(.ok)))
  }

  /// A token the edge's certificate did not mint: the edge cannot open it, answers with
  /// REFUSE_CLEAR, and the real session ends as an invalid token.
  @Test func aTokenOfAnotherCertificate_endsAsInvalidToken() throws {
    var bench = SecureBench()
    var devices = [try Self.channelDevice(host: 4, seed: 4)]
    let room = SecureBench.channel("room")
    let other = try TokenMinter(certificate: Array("another certificate".utf8))
    let token = try Token(
      validating: Array(
        other.mint(appID: Fixture.appID, grant: .channel(room, uid: 1), expiresAt: 0).utf8))
    let first = try devices[0].call(now: bench.now) { session, output, now in
      try session.join(token: token, channel: room, uid: 1, now: now, into: &output)
    }
    Self.exchange(first, from: 0, devices: &devices, bench: &bench)
    #expect(devices[0].notes.contains(.connectionStateChanged(.disconnected, .invalidToken)))
  }
}
