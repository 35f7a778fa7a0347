// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherCore
import TetherEdge
import TetherLab

#if canImport(Glibc)
  import Glibc
#endif

/// The real `tether-edge` process serving login sessions on loopback, driven by plain UDP
/// sockets that speak the login profile (the client core is tested on its own): LOGIN,
/// channel operations and member events, `tether-edge kick --user-id` with a ban, the
/// online grace scaled by `--time-scale`, and the counters printed on stop.
@Suite(.serialized, Lab.enabled) struct LoginEdgeEndToEndTests {
  static let appID = "demo-app"
  static let certificate = "demo-certificate"

  /// A version 1 token: these sockets speak version 1, which the edge still takes beside
  /// version 2 (docs/PROTOCOL.md §12.1); `tether-edge token` prints version 2 ones.
  static func token(_ user: String, edge: EdgeProcess) throws -> Token {
    let signer = TokenSigner(
      appID: try AppID(validating: Array(appID.utf8)), certificate: Array(certificate.utf8))
    let text = signer.sign(
      .user(try UserID(validating: Array(user.utf8))),
      expiresAt: UInt64(Date().timeIntervalSince1970) + 3600)
    return try Token(validating: text)
  }

  static func login(_ user: String, token: Token) throws -> Message {
    .login(
      LoginRequest(
        appID: try AppID(validating: Array(appID.utf8)),
        userID: try UserID(validating: Array(user.utf8)),
        token: token, isRelogin: false))
  }

  static func join(_ channel: String, sequence: UInt32, session: UInt32) throws -> Message {
    .channelOperation(
      ChannelOperation(
        session: session, sequence: sequence, kind: .join,
        channel: try ChannelName(validating: Array(channel.utf8))))
  }

  @Test func loginChannelsKickBanAndGrace_onARealServer() throws {
    // Time scale 0.1: the grace is 3 s.
    let edge = try EdgeProcess(
      binary: Lab.edge, appID: Self.appID, certificate: Self.certificate, timeScale: 0.1,
      extraArguments: ["--print-counters"])
    defer { edge.stop() }
    let port = edge.port
    let alice = try LoginSocket(port: port, cookie: 0xA11CE)
    let bob = try LoginSocket(port: port, cookie: 0xB0B)
    defer {
      alice.close()
      bob.close()
    }

    try bob.send(Self.login("bob", token: Self.token("bob", edge: edge)))
    guard case .loginAccept(let accept)? = bob.receive() else {
      Issue.record("bob: no LOGIN_ACCEPT")
      return
    }
    #expect(!accept.resumed)
    try bob.send(Self.join("room", sequence: 1, session: accept.session))
    #expect(bob.receive() == .channelAck(session: accept.session, sequence: 1))
    try alice.send(Self.login("alice", token: Self.token("alice", edge: edge)))
    guard case .loginAccept(let aliceAccept)? = alice.receive() else {
      Issue.record("alice: no LOGIN_ACCEPT")
      return
    }
    // Each server session has a number of its own, carried by what belongs to it.
    #expect(aliceAccept.session != accept.session)
    try alice.send(Self.join("room", sequence: 1, session: aliceAccept.session))
    #expect(alice.receive() == .channelAck(session: aliceAccept.session, sequence: 1))
    guard case .memberEvents(let joined)? = bob.receive() else {
      Issue.record("bob: no member event")
      return
    }
    #expect(joined.map { "\($0.sequence) \($0.kind)" } == ["1 joined"])

    // The admin bans Alice: KICK BANNED to her, *left* to Bob, her next LOGIN refused 7.
    let kick = try edge.kick(userID: "alice", banSeconds: 30)
    #expect(kick.status == 0)
    #expect(kick.lines == ["kicked"])
    #expect(alice.receive() == .kick(.banned))
    guard case .memberEvents(let left)? = bob.receive() else {
      Issue.record("bob: no left event")
      return
    }
    #expect(left.map { "\($0.sequence) \($0.kind)" } == ["2 left"])
    let again = try LoginSocket(port: port, cookie: 0xA2)
    defer { again.close() }
    try again.send(Self.login("alice", token: Self.token("alice", edge: edge)))
    #expect(again.receive() == .loginRefuse(code: 7))

    // Bob keeps quiet past his (scaled) grace: his heartbeat then finds no session.
    usleep(4_500_000)
    bob.send(.loginHeartbeat(sequence: 1, eventsReceived: 2))
    #expect(bob.receive() == .sessionUnknown)

    #expect(edge.stop() == 0)
    let counters = try #require(edge.output.first { $0.hasPrefix("counters ") })
    let tables = try #require(edge.output.first { $0.hasPrefix("tables ") })
    #expect(counters.contains(" refused-logins 1 "), "\(counters)")
    #expect(tables.contains(" logins 0 ") && tables.contains(" user-bans 1"), "\(tables)")
  }
}

/// One UDP socket connected to the server, sending under one cookie.
struct LoginSocket {
  let fd: Int32
  let cookie: UInt64

  init(port: UInt16, cookie: UInt64) throws {
    self.cookie = cookie
    fd = try Loopback.socket(peer: port, receiveTimeout: 2)
  }

  func close() { Glibc.close(fd) }

  func send(_ message: Message) {
    Loopback.send(fd, Packet(cookie: cookie, message: message).encoded)
  }

  /// The next message under this socket's cookie, waiting up to 2 s; nil if none came.
  func receive() -> Message? {
    var buffer = [UInt8](repeating: 0, count: 1500)
    while true {
      guard let (count, _) = Loopback.receive(fd, into: &buffer) else { return nil }
      guard let packet = try? Packet.decode(buffer[0..<count]), packet.cookie == cookie else {
        continue
      }
      return packet.message
    }
  }
}
