// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// A scripted protocol version 2 device for the edge tests: TetherCore's own handshake
/// (``DeviceHandshake``) and sealed datagrams (``SealedData``), with the payloads of
/// docs/PROTOCOL.md §12.7 written and read by hand, so each test plays exactly the
/// datagrams it means to.
struct SecureDevice {
  let crypto = SodiumCrypto()
  var token: TokenV2
  var address: PeerAddress
  var handshake: DeviceHandshake<SodiumCrypto>
  /// The session's keys once a RESPONSE opened.
  var keys: SessionKeys<SodiumCrypto>?
  var data: SealedData<SodiumDatagramCipher>?
  /// The CONFIRM of the last RESPONSE, the same bytes at every repeat.
  var confirm: ConfirmMessage?
  var cookie: [UInt8]?
  /// The reset value the last ACCEPT gave.
  var resetValue: [UInt8] = []

  init(token text: String, address: PeerAddress) {
    // The tests' tokens are minted by TokenMinter: they parse.
    token = try! TokenV2(text: Array(text.utf8)[...], crypto: SodiumCrypto())
    self.address = address
    handshake = DeviceHandshake(crypto: SodiumCrypto())
  }

  var sessionID: UInt64 { data?.sessionID ?? 0 }

  /// A new attempt's INIT; with `resume`, naming the current session and proving it.
  mutating func initiate(_ request: HandshakeRequest, resume: Bool = false) -> [UInt8] {
    let resumed = keys.flatMap { keys in
      resume
        ? DeviceHandshake<SodiumCrypto>.Resume(sessionID: keys.sessionID, key: keys.resumeKey) : nil
    }
    return try! handshake.initiate(token: token, request: request, resume: resumed, cookie: cookie)
      .bytes
  }

  /// A new attempt's INIT naming session `id` without its `k_resume`, as another holder of
  /// a shared token can write it (it knows the device secret, not the session's keys): its
  /// proof does not hold.
  mutating func initiate(_ request: HandshakeRequest, forgingResumeOf id: UInt64) -> [UInt8] {
    let forged = DeviceHandshake<SodiumCrypto>.Resume(
      sessionID: id, key: [UInt8](repeating: 7, count: 32))
    return try! handshake.initiate(token: token, request: request, resume: forged, cookie: cookie)
      .bytes
  }

  /// Takes a handshake answer; a RESPONSE gives the keys and the CONFIRM, a COOKIE_REPLY the
  /// cookie.
  mutating func take(_ answer: [UInt8]) throws(HandshakeError)
    -> DeviceHandshake<SodiumCrypto>
    .Outcome
  {
    let outcome = try handshake.receive(answer[...])
    switch outcome {
    case .established(let established):
      confirm = established.confirm
      keys = established.keys
      data = established.keys.deviceData()
    case .cookie(let cookie): self.cookie = cookie
    case .refused: break
    }
    return outcome
  }

  /// `payload` as this session's next DATA datagram.
  mutating func seal(_ payload: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    try! data!.seal(payload[...], into: &out)
    return out
  }

  /// The payload of a DATA datagram of this session, if it opens.
  mutating func open(_ datagram: [UInt8]) -> [UInt8]? {
    var out: [UInt8] = []
    guard (try? data?.open(datagram[...], into: &out)) != nil else { return nil }
    return out
  }

  /// Whether `datagram` is this session's RESET with its reset value (compared in constant
  /// time, as a device does).
  func acceptsReset(_ datagram: [UInt8]) -> Bool {
    guard let reset = try? ResetMessage(decoding: datagram[...]), reset.sessionID == sessionID
    else { return false }
    return crypto.constantTimeEqual(reset.resetValue, resetValue[...])
  }
}

/// Device payloads (§12.7), as a device writes them.
enum DevicePayloads {
  static func heartbeat(_ sequence: UInt32) -> [UInt8] {
    [0x02] + bigEndian(UInt64(sequence), 4) + [0, 0, 0, 0]
  }
  static let leave: [UInt8] = [0x03] + [UInt8](repeating: 0, count: 8)
  static let logout: [UInt8] = [0x07] + [UInt8](repeating: 0, count: 8)
  static func renew(_ token: TokenV2) -> [UInt8] { [0x04] + token.sent }
  static func loginHeartbeat(_ sequence: UInt32, session: UInt32, events: UInt32) -> [UInt8] {
    [0x06] + bigEndian(UInt64(sequence), 4) + bigEndian(UInt64(session), 4)
      + bigEndian(UInt64(events), 4)
  }
  static func channelOperation(
    session: UInt32, sequence: UInt32, kind: ChannelOperation.Kind, channel: String
  ) -> [UInt8] {
    let name = Array(channel.utf8)
    return [0x08] + bigEndian(UInt64(session), 4) + bigEndian(UInt64(sequence), 4)
      + [kind.rawValue, UInt8(name.count)] + name
      + [UInt8](repeating: 0, count: 63 - name.count)
  }

  static func bigEndian(_ value: UInt64, _ width: Int) -> [UInt8] {
    (0..<width).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - $0))) }
  }
}

/// What an edge payload (§12.7) says, read as a device reads it.
struct EdgePayloadView {
  let bytes: [UInt8]
  var type: UInt8 { bytes.first ?? 0 }

  /// The version 1 message it carries (an ACCEPT's or LOGIN_ACCEPT's reset value left out);
  /// nil for a refusal, whose reason and detail are ``refusal``.
  var message: Message? {
    var body = Array(bytes.dropFirst())
    switch type {
    case 0x81, 0x89:
      guard body.count >= 16 else { return nil }
      body.removeLast(16)
    case 0x82, 0x8A: return nil
    default: break
    }
    return try? Packet.decode(
      ([0x54, 0x48, 0x01, type] + [UInt8](repeating: 0, count: 8) + body)[...]
    )
    .message
  }

  /// An ACCEPT's or LOGIN_ACCEPT's reset value.
  var resetValue: [UInt8] { Array(bytes.suffix(16)) }

  /// A REFUSE's or LOGIN_REFUSE's reason (or code) and detail.
  var refusal: (reason: UInt8, detail: UInt8)? {
    guard type == 0x82 || type == 0x8A, bytes.count == 3 else { return nil }
    return (bytes[1], bytes[2])
  }
}

/// The real ``EdgeServer`` with version 2 devices (and version 1 packets where a test mixes
/// them) on a virtual clock. Every datagram sent from an address the edge has not validated
/// is checked against §12.13: what the edge sends back there is at most what it received
/// (``AmplificationBudget``).
struct SecureBench {
  var server: EdgeServer<SodiumCrypto>
  var now = Instant(nanoseconds: 1_000_000_000_000)
  let config: EdgeConfig
  let minter: TokenMinter<SodiumCrypto>
  /// Every datagram the edge sent, in order.
  var sent: [Outgoing] = []

  init(config: EdgeConfig = World.config()) {
    self.config = config
    server = EdgeServer(config: config)
    minter = TokenMinter(crypto: SodiumCrypto(), keys: config.certificateKeys)
  }

  /// An edge of the tests' app with version 2's limits as given.
  init(
    maxChannelMembers: Int? = nil, maxAppSessions: Int? = nil,
    handshakeRate: Int = HandshakeRate.defaultPerSecond
  ) throws {
    self.init(
      config: try EdgeConfig(
        appID: Fixture.appID, appCertificate: World.certificate, handshakeRate: handshakeRate,
        maxChannelMembers: maxChannelMembers, maxAppSessions: maxAppSessions))
  }

  /// A device at 10.0.0.`host`:`port` with a token of `grant`.
  func device(
    _ grant: TokenGrant, host: UInt8 = 1, port: UInt16 = 40_000, expiresAt: UInt64 = 0
  ) -> SecureDevice {
    SecureDevice(
      token: token(grant, expiresAt: expiresAt), address: Self.address(host, port: port))
  }

  var wallClock: UInt64 { World.wallBase + now.nanoseconds / 1_000_000_000 }

  /// A `sockaddr_in` of 10.0.0.`host`:`port`, as the UDP loop gives them.
  static func address(_ host: UInt8, port: UInt16 = 40_000) -> PeerAddress {
    PeerAddress(
      bytes: [2, 0, UInt8(port >> 8), UInt8(port & 0xFF), 10, 0, 0, host]
        + [UInt8](repeating: 0, count: 8))!
  }

  static func channel(_ text: String) -> ChannelName {
    try! ChannelName(validating: Array(text.utf8))
  }
  static func user(_ text: String) -> UserID { try! UserID(validating: Array(text.utf8)) }

  /// A version 2 token's text.
  func token(
    _ grant: TokenGrant, expiresAt: UInt64 = 0, appID: AppID = Fixture.appID
  ) -> String {
    minter.mint(appID: appID, grant: grant, expiresAt: expiresAt)
  }

  static func channelRequest(
    _ channel: String = "lobby", uid: UInt32 = 0, appID: String = "app-1", versions: [UInt8] = [2]
  ) -> HandshakeRequest {
    HandshakeRequest(
      versions: versions, uid: uid, appID: Array(appID.utf8), kind: HandshakeRequest.channelKind,
      name: Array(channel.utf8))
  }

  static func loginRequest(_ user: String, relogin: Bool = false) -> HandshakeRequest {
    HandshakeRequest(
      flags: relogin ? HandshakeRequest.rejoinFlag : 0, appID: Array("app-1".utf8),
      kind: HandshakeRequest.loginKind, name: Array(user.utf8))
  }

  /// Sends `bytes` from `address` and returns what the edge sent in answer.
  mutating func send(_ bytes: [UInt8], from address: PeerAddress) -> [Outgoing] {
    let out = server.receive(bytes[...], from: address, now: now, wallClock: wallClock)
    sent += out
    return out
  }

  /// As ``send(_:from:)`` from an address the edge has not validated: never more bytes
  /// back there than came in.
  mutating func sendUnvalidated(
    _ bytes: [UInt8], from address: PeerAddress, sourceLocation: SourceLocation = #_sourceLocation
  ) -> [Outgoing] {
    let out = send(bytes, from: address)
    var budget = AmplificationBudget(received: bytes.count)
    for datagram in out where datagram.address == address {
      let fits = budget.spend(datagram.bytes.count)
      #expect(fits, "amplified: \(datagram.bytes.count) bytes", sourceLocation: sourceLocation)
    }
    return out
  }

  /// Runs the edge's timers up to `now + interval`.
  mutating func advance(by interval: Interval) -> [Outgoing] {
    now = now + interval
    let out = server.tick(now: now, wallClock: wallClock)
    sent += out
    return out
  }

  /// INIT, RESPONSE, CONFIRM: the device's handshake, and the edge's answers to the CONFIRM
  /// (ACCEPT first), opened. Records an issue if the handshake does not complete.
  @discardableResult
  mutating func connect(
    _ device: inout SecureDevice, _ request: HandshakeRequest, resume: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> [EdgePayloadView] {
    guard handshake(&device, request, resume: resume, sourceLocation: sourceLocation) else {
      return []
    }
    return confirm(&device)
  }

  /// INIT and RESPONSE: the device holds its CONFIRM and keys, unconfirmed. Records an
  /// issue and returns false without a RESPONSE.
  @discardableResult
  mutating func handshake(
    _ device: inout SecureDevice, _ request: HandshakeRequest, resume: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> Bool {
    let answers = sendUnvalidated(device.initiate(request, resume: resume), from: device.address)
    guard answers.count == 1, case .established? = try? device.take(answers[0].bytes) else {
      Issue.record("no RESPONSE: \(answers.map(\.bytes.count))", sourceLocation: sourceLocation)
      return false
    }
    return true
  }

  /// The device's CONFIRM again; the edge's answers to it, opened.
  mutating func confirm(_ device: inout SecureDevice) -> [EdgePayloadView] {
    let out = send(device.confirm!.bytes, from: device.address)
    let views = out.filter { $0.address == device.address }.compactMap {
      device.open($0.bytes).map(EdgePayloadView.init)
    }
    if let accept = views.first, accept.type == 0x81 || accept.type == 0x89 {
      device.resetValue = accept.resetValue
    }
    return views
  }

  /// Sends the device's next DATA with `payload`; the edge's answers to it, opened.
  mutating func data(_ device: inout SecureDevice, _ payload: [UInt8]) -> [EdgePayloadView] {
    let out = send(device.seal(payload), from: device.address)
    return out.filter { $0.address == device.address }.compactMap {
      device.open($0.bytes).map(EdgePayloadView.init)
    }
  }

  /// What the edge sent `device` from `index` on, opened (datagrams that do not open left out).
  func received(by device: inout SecureDevice, since index: Int) -> [EdgePayloadView] {
    sent[index...].filter { $0.address == device.address }.compactMap {
      device.open($0.bytes).map(EdgePayloadView.init)
    }
  }
}
