// SPDX-License-Identifier: Apache-2.0
/// One message with its session: version 1's datagram, a 12-byte header (magic "TH",
/// version, type, session cookie: docs/PROTOCOL.md §2.2) and one ``Message``. No longer the
/// wire (version 2 is, §12: the device's layer writes its datagrams from the message, and
/// hands the session what opened as a packet under its own cookie, §12.10); the sessions,
/// the edge, the simulation's record and the benchmarks still speak it.
public struct Packet: Equatable, Sendable {
  /// Version 1, the header's version byte (the wire speaks version 2: docs/PROTOCOL.md §12).
  public static let version: UInt8 = 1
  /// No datagram of the protocol is longer (it fits a 1280-byte IPv6 MTU with room for
  /// the IP and UDP headers).
  public static let maximumSize = 1200
  public static let headerSize = 12
  static let magic: (UInt8, UInt8) = (0x54, 0x48)  // "TH"

  /// The session's cookie: chosen at random by the client for each join and kept inside the
  /// device (docs/PROTOCOL.md §2.1); the edge's packets carry its session id here. A client
  /// ignores server messages whose cookie is not its own.
  public var cookie: UInt64
  public var message: Message

  public init(cookie: UInt64, message: Message) {
    self.cookie = cookie
    self.message = message
  }

  /// Decodes one datagram. The result may share `bytes`' storage (a presence digest does).
  /// - Throws: a ``WireError`` for any input that is not exactly one valid packet.
  public static func decode(_ bytes: ArraySlice<UInt8>) throws(WireError) -> Packet {
    guard bytes.count <= maximumSize else { throw .oversized }
    var reader = ByteReader(bytes)
    guard try reader.u8() == magic.0, try reader.u8() == magic.1 else { throw .badMagic }
    let version = try reader.u8()
    guard version == Self.version else { throw .unsupportedVersion(version) }
    let type = try reader.u8()
    let cookie = try reader.u64()
    let message = try MessageType.decodeBody(type, &reader)
    try reader.expectEnd()
    return Packet(cookie: cookie, message: message)
  }

  /// Appends the encoded packet to `bytes` (so a caller can reuse one buffer for every
  /// packet it sends).
  public func encode(into bytes: inout [UInt8]) {
    let typeIndex = writeHeader(into: &bytes)
    bytes[typeIndex] = message.writeBody(into: &bytes).rawValue
  }

  /// As ``encode(into:)``, for a client's packet: a session sends nothing else, so the
  /// library it is built into holds no encoder of a server's message.
  func encodeAsClient(into bytes: inout [UInt8]) {
    let typeIndex = writeHeader(into: &bytes)
    bytes[typeIndex] = message.writeClientBody(into: &bytes).rawValue
  }

  /// Magic, version, a type byte of 0 and the cookie; returns where the type byte is. It is
  /// filled in from what writing the body returns: one switch over the message instead of
  /// two (and no copy of it for a second one).
  private func writeHeader(into bytes: inout [UInt8]) -> Int {
    bytes.appendBigEndian(
      UInt32(Self.magic.0) << 24 | UInt32(Self.magic.1) << 16 | UInt32(Self.version) << 8)
    let typeIndex = bytes.count - 1
    bytes.appendBigEndian(cookie)
    return typeIndex
  }

  /// The encoded packet in a new array.
  public var encoded: [UInt8] {
    var bytes: [UInt8] = []
    encode(into: &bytes)
    return bytes
  }
}

/// The type byte of each message.
enum MessageType: UInt8 {
  case join = 0x01
  case heartbeat = 0x02
  case leave = 0x03
  case renewToken = 0x04
  case login = 0x05
  case loginHeartbeat = 0x06
  case logout = 0x07
  case channelOperation = 0x08
  case accept = 0x81
  case refuse = 0x82
  case heartbeatAck = 0x83
  case presence = 0x84
  case kick = 0x85
  case tokenExpired = 0x86
  case sessionUnknown = 0x87
  case tokenRenewed = 0x88
  case loginAccept = 0x89
  case loginRefuse = 0x8A
  case memberEvents = 0x8B
  case channelAck = 0x8C

  static func decodeBody(_ type: UInt8, _ reader: inout ByteReader) throws(WireError) -> Message {
    type < 0x80 ? try decodeClientBody(type, &reader) : try decodeServerBody(type, &reader)
  }

  /// The body of a client's message (a server reads them). Apart from the server's, so that
  /// a device, which decodes only what a server sends (``decodeServerBody(_:_:)``), holds no
  /// decoder of its own messages and their names (about 0.7 KB of aarch64 text).
  static func decodeClientBody(_ type: UInt8, _ reader: inout ByteReader) throws(WireError)
    -> Message
  {
    switch type {
    case MessageType.join.rawValue:
      let uid = try reader.u32()
      let flags = try reader.u8()
      guard flags & ~1 == 0 else { throw .invalidField }
      let appID = try reader.field(AppID.self, lengthWidth: 1)
      let channel = try reader.field(ChannelName.self, lengthWidth: 1)
      let token = try reader.field(Token.self, lengthWidth: 2)
      return .join(
        JoinRequest(uid: uid, appID: appID, channel: channel, token: token, isRejoin: flags == 1))
    case MessageType.heartbeat.rawValue:
      return .heartbeat(sequence: try reader.u32())
    case MessageType.leave.rawValue:
      return .leave
    case MessageType.renewToken.rawValue:
      return .renewToken(try reader.field(Token.self, lengthWidth: 2))
    case MessageType.login.rawValue:
      let flags = try reader.u8()
      guard flags & ~1 == 0 else { throw .invalidField }
      let appID = try reader.field(AppID.self, lengthWidth: 1)
      let userID = try reader.field(UserID.self, lengthWidth: 1)
      let token = try reader.field(Token.self, lengthWidth: 2)
      return .login(LoginRequest(appID: appID, userID: userID, token: token, isRelogin: flags == 1))
    case MessageType.loginHeartbeat.rawValue:
      return .loginHeartbeat(
        sequence: try reader.u32(), session: try reader.u32(), eventsReceived: try reader.u32())
    case MessageType.logout.rawValue:
      return .logout
    case MessageType.channelOperation.rawValue:
      let session = try reader.u32()
      let sequence = try reader.u32()
      guard let kind = ChannelOperation.Kind(rawValue: try reader.u8()) else {
        throw .invalidField
      }
      let channel = try reader.field(ChannelName.self, lengthWidth: 1)
      return .channelOperation(
        ChannelOperation(session: session, sequence: sequence, kind: kind, channel: channel))
    default:
      throw .unknownType(type)
    }
  }

  /// The body of a server's message (a device reads them).
  static func decodeServerBody(_ type: UInt8, _ reader: inout ByteReader) throws(WireError)
    -> Message
  {
    switch type {
    case MessageType.accept.rawValue:
      let uid = try reader.u32()
      let serverTime = try reader.u64()
      let timeLeft = try reader.u32()
      let flags = try reader.u8()
      guard flags & ~1 == 0 else { throw .invalidField }
      return .accept(
        JoinAccept(
          uid: uid, serverTimeMs: serverTime, tokenTimeLeftMs: timeLeft, resumed: flags == 1))
    case MessageType.refuse.rawValue:
      guard let reason = RefuseReason(rawValue: try reader.u8()) else { throw .invalidField }
      return .refuse(reason)
    case MessageType.heartbeatAck.rawValue:
      return .heartbeatAck(sequence: try reader.u32(), serverTimeMs: try reader.u64())
    case MessageType.presence.rawValue:
      return .presence(try PresenceDigest(reading: &reader))
    case MessageType.kick.rawValue:
      guard let reason = KickReason(rawValue: try reader.u8()) else { throw .invalidField }
      return .kick(reason)
    case MessageType.tokenExpired.rawValue:
      return .tokenExpired
    case MessageType.sessionUnknown.rawValue:
      return .sessionUnknown
    case MessageType.tokenRenewed.rawValue:
      let status = try reader.u8()
      let timeLeft = try reader.u32()
      guard status == 0 || RefuseReason(rawValue: status) != nil else { throw .invalidField }
      return .tokenRenewed(
        TokenRenewal(refused: RefuseReason(rawValue: status), tokenTimeLeftMs: timeLeft))
    case MessageType.loginAccept.rawValue:
      let serverTime = try reader.u64()
      let timeLeft = try reader.u32()
      let flags = try reader.u8()
      guard flags & ~1 == 0 else { throw .invalidField }
      let session = try reader.u32()
      return .loginAccept(
        LoginAccept(
          serverTimeMs: serverTime, tokenTimeLeftMs: timeLeft, resumed: flags == 1,
          session: session))
    case MessageType.loginRefuse.rawValue:
      let code = try reader.u8()
      guard code != 0 else { throw .invalidField }
      return .loginRefuse(code: code)
    case MessageType.memberEvents.rawValue:
      return .memberEvents(try MemberEvents(reading: &reader))
    case MessageType.channelAck.rawValue:
      return .channelAck(session: try reader.u32(), sequence: try reader.u32())
    default:
      throw .unknownType(type)
    }
  }
}

/// A string field of the wire: its type's own rule, checked as the field is read (by one
/// non-generic reader for every string type) and reported as ``WireError/invalidField``.
private protocol WireText {
  static var allowed: ASCIISet { get }
  static var lengths: ClosedRange<Int> { get }
  init(checked bytes: [UInt8])
}
extension AppID: WireText {}
extension ChannelName: WireText {}
extension Token: WireText {}
extension UserID: WireText {}

extension ByteReader {
  fileprivate mutating func field<T: WireText>(_ type: T.Type, lengthWidth: Int)
    throws(WireError) -> T
  {
    T(
      checked: Array(
        try prefixed(lengthWidth: lengthWidth, allowed: T.allowed, lengths: T.lengths)))
  }
}

extension Message {
  /// Appends the body and returns the message's type.
  func writeBody(into bytes: inout [UInt8]) -> MessageType {
    switch self {
    case .join, .heartbeat, .leave, .renewToken, .login, .loginHeartbeat, .logout,
      .channelOperation:
      return writeClientBody(into: &bytes)
    case .accept(let accept):
      bytes.appendBigEndian(accept.uid)
      bytes.appendBigEndian(accept.serverTimeMs)
      bytes.appendBigEndian(accept.tokenTimeLeftMs)
      bytes.appendByte(accept.resumed ? 1 : 0)
      return .accept
    case .refuse(let reason):
      bytes.appendByte(reason.rawValue)
      return .refuse
    case .heartbeatAck(let sequence, let serverTime):
      bytes.appendBigEndian(sequence)
      bytes.appendBigEndian(serverTime)
      return .heartbeatAck
    case .presence(let digest):
      digest.write(into: &bytes)
      return .presence
    case .kick(let reason):
      bytes.appendByte(reason.rawValue)
      return .kick
    case .tokenExpired: return .tokenExpired
    case .sessionUnknown: return .sessionUnknown
    case .tokenRenewed(let renewal):
      bytes.appendByte(renewal.refused?.rawValue ?? 0)
      bytes.appendBigEndian(renewal.tokenTimeLeftMs)
      return .tokenRenewed
    case .loginAccept(let accept):
      bytes.appendBigEndian(accept.serverTimeMs)
      bytes.appendBigEndian(accept.tokenTimeLeftMs)
      bytes.appendByte(accept.resumed ? 1 : 0)
      bytes.appendBigEndian(accept.session)
      return .loginAccept
    case .loginRefuse(let code):
      bytes.appendByte(code)
      return .loginRefuse
    case .memberEvents(let events):
      events.write(into: &bytes)
      return .memberEvents
    case .channelAck(let session, let sequence):
      bytes.appendBigEndian(session)
      bytes.appendBigEndian(sequence)
      return .channelAck
    }
  }

  /// ``writeBody(into:)`` for the messages a client sends; a server's writes nothing (no
  /// session sends one) and reads as LEAVE.
  func writeClientBody(into bytes: inout [UInt8]) -> MessageType {
    switch self {
    case .join(let request):
      bytes.appendBigEndian(request.uid)
      bytes.appendByte(request.isRejoin ? 1 : 0)
      bytes.appendPrefixed(request.appID.bytes, lengthWidth: 1)
      bytes.appendPrefixed(request.channel.bytes, lengthWidth: 1)
      bytes.appendPrefixed(request.token.bytes, lengthWidth: 2)
      return .join
    case .heartbeat(let sequence):
      bytes.appendBigEndian(sequence)
      return .heartbeat
    case .renewToken(let token):
      bytes.appendPrefixed(token.bytes, lengthWidth: 2)
      return .renewToken
    case .login(let request):
      bytes.appendByte(request.isRelogin ? 1 : 0)
      bytes.appendPrefixed(request.appID.bytes, lengthWidth: 1)
      bytes.appendPrefixed(request.userID.bytes, lengthWidth: 1)
      bytes.appendPrefixed(request.token.bytes, lengthWidth: 2)
      return .login
    case .loginHeartbeat(let sequence, let session, let received):
      bytes.appendBigEndian(sequence)
      bytes.appendBigEndian(session)
      bytes.appendBigEndian(received)
      return .loginHeartbeat
    case .logout: return .logout
    case .channelOperation(let operation):
      bytes.appendBigEndian(operation.session)
      bytes.appendBigEndian(operation.sequence)
      bytes.appendByte(operation.kind.rawValue)
      bytes.appendPrefixed(operation.channel.bytes, lengthWidth: 1)
      return .channelOperation
    default: return .leave
    }
  }
}

extension Packet {
  /// Appends `packet` to `packets`: one copy of the append for every array of packets (the
  /// output's, the login's channels and operations).
  @inline(never)
  static func add(_ packet: consuming Packet, to packets: inout [Packet]) {
    packets.append(packet)
  }
}
