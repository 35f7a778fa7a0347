// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// The real ``EdgeServer`` driven by hand-made datagrams of protocol version 2 on a virtual
/// clock, written as the messages they stand for: the client cores are not in the tests'
/// reach here, so each test plays its clients' messages itself, and the bench makes them
/// version 2's. A client is named by a cookie of the test's choosing (it never crosses the
/// wire): a LOGIN or JOIN is a handshake (INIT, RESPONSE, CONFIRM) with the client's token,
/// resuming the session it holds, if any; anything else is a DATA datagram sealed under its
/// session's keys (nothing, for a client with no keys yet). What the edge sends is read as
/// a device reads it and recorded as messages under the client's cookie: sealed payloads
/// opened, a RESET as SESSION_UNKNOWN, a handshake refusal as the REFUSE, KICK BANNED or
/// LOGIN_REFUSE it stands for, a KICK repeated to a resume of a kicked session as that KICK.
struct LoginBench {
  var server: EdgeServer<SimCrypto>
  var now: Instant = .zero
  /// Everything the server sent, in order.
  var sent: [Sent] = []
  /// Each client's device, by its cookie.
  private(set) var devices: [UInt64: SecureDevice] = [:]
  /// Every session id a client's handshakes made, to its cookie and the device's side of
  /// that session's DATA (what the edge sealed under it opens there).
  private var sessions: [UInt64: (cookie: UInt64, data: SealedData<SodiumDatagramCipher>)] = [:]
  /// Each client's handshake datagrams, in the order sent (INITs and CONFIRMs), and every
  /// datagram sent, for the tests that replay them.
  private(set) var handshakes: [UInt64: [[UInt8]]] = [:]
  private(set) var datagrams: [UInt64: [[UInt8]]] = [:]

  struct Sent: Equatable {
    var at: Instant
    var to: PeerAddress
    var cookie: UInt64
    var message: Message
  }

  init(config: EdgeConfig = World.config()) {
    server = EdgeServer(config: config, crypto: SimCrypto(seed: 1))
  }

  /// Goes on from `server` as it is at `now` (say, a ``World``'s, with channel sessions).
  init(server: EdgeServer<SimCrypto>, now: Instant) {
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

  /// A version 2 login token for `user`, expiring at `expiresAt` (unix seconds; 0: never).
  static func token(_ user: String, expiresAt: UInt64 = 0, appID: AppID = Fixture.appID)
    -> Token
  {
    // The certificate is not empty, and a minted token is a valid Token.
    let minter = try! TokenMinter(certificate: World.certificate)
    return try! Token(
      validating: Array(
        minter.mint(appID: appID, grant: .user(Self.user(user)), expiresAt: expiresAt).utf8))
  }

  /// `token` with a character of its sealed part changed, still base64url: the text parses
  /// as a version 2 token, and its `W` opens at no edge (REFUSE_CLEAR).
  static func tampered(_ token: Token) -> Token {
    var bytes = token.bytes
    bytes[200] = bytes[200] == 0x41 ? 0x42 : 0x41
    return try! Token(validating: bytes)
  }

  /// A version 2 login token for `user` under another certificate than the edge's.
  static func foreignToken(_ user: String) -> Token {
    let minter = try! TokenMinter(certificate: Array("another-certificate".utf8))
    return try! Token(
      validating: Array(
        minter.mint(appID: Fixture.appID, grant: .user(Self.user(user)), expiresAt: 0).utf8))
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

  /// Delivers `message` from the client `cookie` names, at `address`, at the current time;
  /// returns what the server answered (also appended to ``sent``). The bench's clients are
  /// in the server session held for them (they took its LOGIN_ACCEPT): a LOGIN_HEARTBEAT or
  /// CHANNEL_OPERATION names it, whatever session `message` says.
  /// ``sendAsIs(_:cookie:from:)`` sends one of another server session.
  @discardableResult
  mutating func send(_ message: Message, cookie: UInt64, from address: PeerAddress) -> [Sent] {
    sendAsIs(inHeldSession(message, cookie: cookie), cookie: cookie, from: address)
  }

  /// As ``send(_:cookie:from:)``, with the server session `message` names.
  @discardableResult
  mutating func sendAsIs(_ message: Message, cookie: UInt64, from address: PeerAddress) -> [Sent] {
    switch message {
    case .login(let request):
      let ask = HandshakeRequest(
        flags: request.isRelogin ? HandshakeRequest.rejoinFlag : 0,
        appID: request.appID.bytes, kind: HandshakeRequest.loginKind, name: request.userID.bytes)
      return handshake(ask, token: request.token, cookie: cookie, from: address)
    case .join(let request):
      let ask = HandshakeRequest(
        uid: request.uid, appID: request.appID.bytes, kind: HandshakeRequest.channelKind,
        name: request.channel.bytes)
      return handshake(ask, token: request.token, cookie: cookie, from: address)
    default:
      guard let payload = Self.payload(of: message), devices[cookie]?.data != nil else {
        return []
      }
      let datagram = devices[cookie]!.seal(payload)
      datagrams[cookie, default: []].append(datagram)
      return sendRaw(datagram, from: address)
    }
  }

  /// The DATA payload a device sends for `message` (docs/PROTOCOL.md §12.7).
  static func payload(of message: Message) -> [UInt8]? {
    switch message {
    case .heartbeat(let sequence): DevicePayloads.heartbeat(sequence)
    case .leave: DevicePayloads.leave
    case .logout: DevicePayloads.logout
    case .loginHeartbeat(let sequence, let session, let events):
      DevicePayloads.loginHeartbeat(sequence, session: session, events: events)
    case .channelOperation(let operation):
      DevicePayloads.channelOperation(
        session: operation.session, sequence: operation.sequence, kind: operation.kind,
        channel: String(decoding: operation.channel.bytes, as: UTF8.self))
    case .renewToken(let token):
      // A text that is no version 2 token is sent as a `W` that opens nowhere.
      (try? TokenV2(text: token.bytes[...], crypto: SodiumCrypto())).map(DevicePayloads.renew)
        ?? [0x04] + [UInt8](repeating: 0x41, count: 219)
    default: nil
    }
  }

  /// INIT (again with the cookie, after a COOKIE_REPLY), then the CONFIRM of the RESPONSE:
  /// the client's handshake for `request` with `token`, resuming the session it holds. What
  /// the edge sends its address back for the INIT is never more than the INIT.
  private mutating func handshake(
    _ request: HandshakeRequest, token: Token, cookie: UInt64, from address: PeerAddress
  ) -> [Sent] {
    let text = String(decoding: token.bytes, as: UTF8.self)
    guard (try? TokenV2(text: token.bytes[...], crypto: SodiumCrypto())) != nil else {
      Issue.record("the bench's clients hold version 2 tokens: \(text)")
      return []
    }
    var device = SecureDevice(token: text, address: address)
    if let held = devices[cookie] {
      device.keys = held.keys
      device.data = held.data
      device.resetValue = held.resetValue
    }
    let resume = device.keys != nil
    var recorded: [Sent] = []
    for _ in 0..<2 {
      let initiation = device.initiate(request, resume: resume)
      handshakes[cookie, default: []].append(initiation)
      let out = server.receive(initiation[...], from: address, now: now, wallClock: wallClock)
      let back = out.filter { $0.address == address }.reduce(0) { $0 + $1.bytes.count }
      #expect(back <= initiation.count, "amplified: \(back) bytes for \(initiation.count)")
      guard let answer = out.first(where: { $0.address == address }) else {
        devices[cookie] = device
        return recorded
      }
      // Sealed DATA of the session the INIT resumes: the KICK that ended it, again (§5.5),
      // where a handshake answer would be.
      if answer.bytes.first == 0x07 {
        devices[cookie] = device
        return recorded + record(out)
      }
      switch try? device.take(answer.bytes) {
      case .established(let established)?:
        sessions[established.keys.sessionID] = (cookie, established.keys.deviceData())
        devices[cookie] = device
        handshakes[cookie, default: []].append(established.confirm.bytes)
        return recorded + sendRaw(established.confirm.bytes, from: address)
      case .cookie?:
        continue  // at once, with the cookie's mac2
      case .refused(let refusal)?:
        let message = Self.message(refusing: refusal, kind: request.kind)
        let refused = Sent(at: now, to: address, cookie: cookie, message: message)
        sent.append(refused)
        recorded.append(refused)
        devices[cookie] = device
        return recorded
      case nil:
        Issue.record("an answer the device cannot take: \(answer.bytes.count) bytes")
        return recorded
      }
    }
    return recorded
  }

  /// The message a handshake refusal stands for: REFUSE (KICK BANNED for reason 6) or
  /// LOGIN_REFUSE, INVALID_TOKEN (login 5) for a REFUSE_CLEAR.
  static func message(refusing refusal: DeviceHandshake<SodiumCrypto>.Refusal, kind: UInt8)
    -> Message
  {
    let reason: UInt8
    switch refusal {
    case .tokenNotOpened:
      reason = kind == HandshakeRequest.loginKind ? 5 : RefuseReason.invalidToken.rawValue
    case .sealed(let sealed, _): reason = sealed
    }
    guard kind == HandshakeRequest.channelKind else { return .loginRefuse(code: reason) }
    if reason == 6 { return .kick(.banned) }
    return RefuseReason(rawValue: reason).map(Message.refuse) ?? .refuse(.rejected)
  }

  /// The session id the edge holds the client `cookie` names under (its last handshake's).
  func id(_ cookie: UInt64) -> UInt64 { devices[cookie]?.sessionID ?? 0 }

  /// The number of the login session held for the client `cookie` names, if any.
  func session(_ cookie: UInt64) -> UInt32? { server.table[id(cookie)]?.login?.session }

  /// `message` as a client in the session held for `cookie` sends it.
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

  /// What the edge sent, read by the device of the session each datagram names: sealed
  /// payloads opened (one that does not open, or of no session of the bench's, is left
  /// out), a RESET as SESSION_UNKNOWN, handshake and admin answers left out.
  @discardableResult
  mutating func record(_ outgoing: [Outgoing]) -> [Sent] {
    var decoded: [Sent] = []
    for out in outgoing {
      guard let id = Self.sessionID(out.bytes), let session = sessions[id] else { continue }
      let message: Message?
      switch out.bytes.first {
      case 0x07:
        var payload: [UInt8] = []
        guard (try? sessions[id]?.data.open(out.bytes[...], into: &payload)) != nil else {
          continue
        }
        let view = EdgePayloadView(bytes: payload)
        if let refusal = view.refusal {
          message =
            view.type == 0x8A
            ? .loginRefuse(code: refusal.reason)
            : refusal.reason == 6
              ? .kick(.banned) : RefuseReason(rawValue: refusal.reason).map(Message.refuse)
        } else {
          message = view.message
        }
      case 0x08: message = .sessionUnknown
      default: message = nil
      }
      guard let message else { continue }
      decoded.append(Sent(at: now, to: out.address, cookie: session.cookie, message: message))
    }
    sent += decoded
    return decoded
  }

  /// The session id of a DATA datagram or a RESET (bytes 1 ..< 9).
  static func sessionID(_ bytes: [UInt8]) -> UInt64? {
    guard bytes.count >= 9, bytes.first == 0x07 || bytes.first == 0x08 else { return nil }
    return bytes[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// Whether `out` begins with an ACCEPT or a LOGIN_ACCEPT.
  static func isAccepted(_ out: [Sent]) -> Bool {
    switch out.first?.message {
    case .accept?, .loginAccept?: true
    default: false
    }
  }

  /// The messages sent to the client `cookie` names, in order.
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

  /// Logs `user` in for the client `cookie` names, from `address`, and confirms the session
  /// with a first heartbeat (as a client does within a second of its LOGIN_ACCEPT).
  mutating func logIn(_ user: String, cookie: UInt64, from address: PeerAddress) {
    send(Self.login(user), cookie: cookie, from: address)
    send(.loginHeartbeat(sequence: 0, eventsReceived: 0), cookie: cookie, from: address)
  }
}
