// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSim

@testable import TetherEdge

/// The real ``EdgeServer`` driven by hand-made login-profile datagrams on a virtual clock:
/// the login client core is not in the tests' reach here, so each test plays its client's
/// datagrams itself and reads the server's answers as decoded packets.
struct LoginBench {
  var server: SodiumEdgeServer
  var now: Instant = .zero
  /// Everything the server sent, in order.
  var sent: [Sent] = []

  struct Sent: Equatable {
    var at: Instant
    var to: PeerAddress
    var cookie: UInt64
    var message: Message
  }

  init(config: EdgeConfig = World.config()) {
    server = EdgeServer(config: config)
  }

  /// Goes on from `server` as it is at `now` (say, a ``World``'s, with channel sessions).
  init(server: SodiumEdgeServer, now: Instant) {
    self.server = server
    self.now = now
  }

  var wallClock: UInt64 { World.wallBase + now.nanoseconds / 1_000_000_000 }

  static func address(_ index: Int) -> PeerAddress { World.address(index) }

  static func user(_ text: String) -> UserID {
    // The tests' user ids are valid.
    try! UserID(validating: Array(text.utf8))
  }

  static func channel(_ text: String) -> ChannelName {
    try! ChannelName(validating: Array(text.utf8))
  }

  /// A login token for `user`, expiring at `expiresAt` (unix seconds; 0: never).
  static func token(_ user: String, expiresAt: UInt64 = 0, appID: AppID = Fixture.appID)
    -> Token
  {
    let signer = TokenSigner(appID: appID, certificate: World.certificate)
    return try! Token(validating: signer.sign(.user(Self.user(user)), expiresAt: expiresAt))
  }

  /// The datagram of `message` under `cookie`.
  static func datagram(_ message: Message, cookie: UInt64) -> [UInt8] {
    Packet(cookie: cookie, message: message).encoded
  }

  static func login(
    _ user: String, token: Token? = nil, appID: AppID = Fixture.appID, relogin: Bool = false
  ) -> Message {
    .login(
      LoginRequest(
        appID: appID, userID: Self.user(user), token: token ?? Self.token(user),
        isRelogin: relogin))
  }

  static func join(_ channel: String, sequence: UInt32) -> Message {
    .channelOperation(
      ChannelOperation(sequence: sequence, kind: .join, channel: Self.channel(channel)))
  }

  static func leave(_ channel: String, sequence: UInt32) -> Message {
    .channelOperation(
      ChannelOperation(sequence: sequence, kind: .leave, channel: Self.channel(channel)))
  }

  /// Delivers `message` under `cookie` from `address` at the current time; returns what the
  /// server answered (also appended to ``sent``). The bench's clients are in the server
  /// session held under their cookie (they took its LOGIN_ACCEPT): a LOGIN_HEARTBEAT or
  /// CHANNEL_OPERATION names it, whatever session `message` says. ``sendAsIs(_:cookie:from:)``
  /// sends one of another server session.
  @discardableResult
  mutating func send(_ message: Message, cookie: UInt64, from address: PeerAddress) -> [Sent] {
    sendAsIs(inHeldSession(message, cookie: cookie), cookie: cookie, from: address)
  }

  /// As ``send(_:cookie:from:)``, with the server session `message` names.
  @discardableResult
  mutating func sendAsIs(_ message: Message, cookie: UInt64, from address: PeerAddress) -> [Sent] {
    sendRaw(Self.datagram(message, cookie: cookie), from: address)
  }

  /// The number of the login session held under `cookie`, if any.
  func session(_ cookie: UInt64) -> UInt32? { server.table[cookie]?.login?.session }

  /// `message` as a client in the session held under `cookie` sends it.
  func inHeldSession(_ message: Message, cookie: UInt64) -> Message {
    guard let session = session(cookie) else { return message }
    switch message {
    case .loginHeartbeat(let sequence, _, let received):
      return .loginHeartbeat(sequence: sequence, session: session, eventsReceived: received)
    case .channelOperation(var operation):
      operation.session = session
      return .channelOperation(operation)
    default:
      return message
    }
  }

  @discardableResult
  mutating func sendRaw(_ datagram: [UInt8], from address: PeerAddress) -> [Sent] {
    record(server.receive(datagram[...], from: address, now: now, wallClock: wallClock))
  }

  /// Runs the server's timers up to `time`.
  mutating func run(until time: Instant) {
    while let due = server.nextDeadline, due <= time {
      now = max(now, due)
      record(server.tick(now: now, wallClock: wallClock))
    }
    now = max(now, time)
  }

  mutating func run(for interval: Interval) { run(until: now + interval) }

  @discardableResult
  private mutating func record(_ outgoing: [Outgoing]) -> [Sent] {
    let decoded = outgoing.compactMap { out -> Sent? in
      guard let packet = try? Packet.decode(out.bytes[...]) else { return nil }
      return Sent(at: now, to: out.address, cookie: packet.cookie, message: packet.message)
    }
    sent += decoded
    return decoded
  }

  /// Whether `out` begins with an ACCEPT or a LOGIN_ACCEPT.
  static func isAccepted(_ out: [Sent]) -> Bool {
    switch out.first?.message {
    case .accept?, .loginAccept?: true
    default: false
    }
  }

  /// The messages sent under `cookie`, in order.
  func messages(to cookie: UInt64) -> [Message] {
    sent.filter { $0.cookie == cookie }.map(\.message)
  }

  /// Every member event sent under `cookie`, as (sequence, kind, channel, user) text, in the
  /// order sent (repeats included).
  func events(to cookie: UInt64) -> [String] {
    messages(to: cookie).flatMap { message -> [String] in
      guard case .memberEvents(let batch) = message else { return [] }
      return batch.map(Self.describe)
    }
  }

  static func describe(_ event: MemberEvent) -> String {
    let kind = event.kind == .joined ? "joined" : "left"
    let channel = String(decoding: event.channel, as: UTF8.self)
    let user = String(decoding: event.userID, as: UTF8.self)
    return "\(event.sequence) \(kind) \(channel) \(user)"
  }

  /// Logs `user` in under `cookie` from `address` and confirms the session with a first
  /// heartbeat (as a client does within a second of its LOGIN_ACCEPT).
  mutating func logIn(_ user: String, cookie: UInt64, from address: PeerAddress) {
    send(Self.login(user), cookie: cookie, from: address)
    send(.loginHeartbeat(sequence: 0, eventsReceived: 0), cookie: cookie, from: address)
  }
}
