// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherCore
import TetherEdge
import TetherLab
import TetherSodium

#if canImport(Glibc)
  import Glibc
#endif

/// The real `tether-edge` process serving login sessions on loopback, driven by plain UDP
/// sockets that speak the login profile over protocol version 2 with TetherCore's own
/// handshake and sealing (the client core is tested on its own): LOGIN, channel operations
/// and member events, `tether-edge kick --user-id` with a ban, the online grace scaled by
/// `--time-scale`, and the counters printed on stop.
@Suite(.serialized, Lab.enabled) struct LoginEdgeEndToEndTests {
  static let appID = "demo-app"
  static let certificate = "demo-certificate"

  /// A version 2 login token for `user`, as `tether-edge token` mints them.
  static func token(_ user: String, edge: EdgeProcess) throws -> String {
    try edge.token(userID: user, expireSeconds: 3600)
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
    var alice = try LoginSocket(port: port)
    var bob = try LoginSocket(port: port)
    defer {
      alice.close()
      bob.close()
    }

    guard
      case .loginAccept(let accept)? = try bob.logIn("bob", token: Self.token("bob", edge: edge))
    else {
      Issue.record("bob: no LOGIN_ACCEPT")
      return
    }
    #expect(!accept.resumed)
    try bob.send(Self.join("room", sequence: 1, session: accept.session))
    #expect(bob.receive() == .channelAck(session: accept.session, sequence: 1))
    guard
      case .loginAccept(let aliceAccept)? = try alice.logIn(
        "alice", token: Self.token("alice", edge: edge))
    else {
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
    var again = try LoginSocket(port: port)
    defer { again.close() }
    #expect(
      try again.logIn("alice", token: Self.token("alice", edge: edge)) == .loginRefuse(code: 7))

    // Bob keeps quiet past his (scaled) grace, and past his session id's ticket lifetime
    // (whose floor of 3 s the time scale does not shrink): his heartbeat then finds no
    // session, and gets its RESET.
    usleep(4_500_000)
    bob.send(.loginHeartbeat(sequence: 1, eventsReceived: 2))
    #expect(bob.receive() == .sessionUnknown)

    #expect(edge.stop() == 0)
    let counters = try #require(edge.output.first { $0.hasPrefix("counters ") })
    let tables = try #require(edge.output.first { $0.hasPrefix("tables ") })
    let v2 = try #require(edge.output.first { $0.hasPrefix("v2 ") })
    #expect(v2.contains(" refused-handshakes 1 "), "\(v2)")  // Alice's banned login
    #expect(tables.contains(" logins 0 ") && tables.contains(" user-bans 1"), "\(tables)")
  }
}

/// One UDP socket connected to the server: a login device of protocol version 2, its
/// handshake (INIT, RESPONSE, CONFIRM) and its DATA made with TetherCore's own types, and
/// each sealed payload read as the message it stands for (docs/PROTOCOL.md §12.7).
struct LoginSocket {
  let fd: Int32
  let crypto = SodiumCrypto()
  var data: SealedData<SodiumDatagramCipher>?

  init(port: UInt16) throws {
    fd = try Loopback.socket(peer: port, receiveTimeout: 2)
  }

  func close() { Glibc.close(fd) }

  /// LOGIN as `user` with `token`: the edge's answer, LOGIN_ACCEPT or LOGIN_REFUSE (a
  /// refusal at the INIT or at the CONFIRM); nil if none came.
  mutating func logIn(_ user: String, token: String) throws -> Message? {
    let parsed = try TokenV2(text: Array(token.utf8)[...], crypto: crypto)
    var handshake = DeviceHandshake(crypto: crypto)
    let request = HandshakeRequest(
      appID: Array(LoginEdgeEndToEndTests.appID.utf8), kind: HandshakeRequest.loginKind,
      name: Array(user.utf8))
    Loopback.send(fd, try handshake.initiate(token: parsed, request: request).bytes)
    guard let answer = receiveDatagram() else { return nil }
    switch try handshake.receive(answer[...]) {
    case .established(let established):
      data = established.keys.deviceData()
      Loopback.send(fd, established.confirm.bytes)
      return receive()
    case .refused(.sealed(let reason, _)): return .loginRefuse(code: reason)
    case .refused(.tokenNotOpened): return .loginRefuse(code: 5)
    case .cookie: return nil
    }
  }

  /// `message` as this session's next DATA datagram (§12.7's payloads).
  mutating func send(_ message: Message) {
    var payload: [UInt8]
    switch message {
    case .loginHeartbeat(let sequence, let session, let events):
      payload = [0x06]
      for value in [sequence, session, events] { payload.appendBigEndian(value) }
    case .channelOperation(let operation):
      payload = [0x08]
      payload.appendBigEndian(operation.session)
      payload.appendBigEndian(operation.sequence)
      payload += [operation.kind.rawValue, UInt8(operation.channel.bytes.count)]
      payload += operation.channel.bytes
      payload += [UInt8](repeating: 0, count: 63 - operation.channel.bytes.count)
    default:
      Issue.record("not a login payload: \(message)")
      return
    }
    var out: [UInt8] = []
    guard (try? data?.seal(payload[...], into: &out)) != nil else {
      Issue.record("no keys to seal with")
      return
    }
    Loopback.send(fd, out)
  }

  /// The next message of this session, waiting up to 2 s; nil if none came. A RESET is
  /// SESSION_UNKNOWN.
  mutating func receive() -> Message? {
    while let datagram = receiveDatagram() {
      if datagram.first == 0x08 { return .sessionUnknown }
      var payload: [UInt8] = []
      guard (try? data?.open(datagram[...], into: &payload)) != nil, let type = payload.first
      else { continue }
      var body = Array(payload.dropFirst())
      switch type {
      case 0x89: body.removeLast(16)  // LOGIN_ACCEPT: its reset value
      case 0x8A: return .loginRefuse(code: body.first ?? 0)
      default: break
      }
      let packet = [0x54, 0x48, 0x01, type] + [UInt8](repeating: 0, count: 8) + body
      return try? Packet.decode(packet[...]).message
    }
    return nil
  }

  private func receiveDatagram() -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 1500)
    guard let (count, _) = Loopback.receive(fd, into: &buffer) else { return nil }
    return Array(buffer[0..<count])
  }
}
