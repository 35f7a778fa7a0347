// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSodium

/// The admin datagram of `tether-edge kick`: remove a member from a channel, and refuse
/// it for `banSeconds` more (0: a plain kick). It travels on the server's own UDP port,
/// told apart from the client protocol by its magic, "TA". Layout (docs/PROTOCOL.md,
/// "Admin: KICK"), every integer big-endian:
///
/// | offset | size | field |
/// |---:|---:|---|
/// | 0 | 2 | magic `54 41` ("TA") |
/// | 2 | 1 | version, 2 |
/// | 3 | 1 | command, 1 = KICK (2 = KICK_USER: ``AdminKickUser``) |
/// | 4 | 1 | A: app id length, 1...64 |
/// | 5 | A | app id |
/// | 5+A | 1 | C: channel length, 1...63 |
/// | 6+A | C | channel |
/// | 6+A+C | 4 | uid |
/// | 10+A+C | 4 | ban seconds |
/// | 14+A+C | 8 | unix time, seconds |
/// | 22+A+C | 8 | nonce, random |
/// | 30+A+C | 32 | `PRF(K_admin, bytes 0 ..< 30+A+C, "tether2 admin")` (§12.14) |
public struct AdminKick: Equatable, Sendable {
  public var channel: ChannelName
  public var uid: UInt32
  /// 0: kick only; otherwise the (channel, uid) is refused this many seconds more.
  public var banSeconds: UInt32
  /// When the request was made (unix seconds): the server takes it within ±60 s.
  public var unixTime: UInt64
  /// Tells two requests apart, so the server can refuse a replayed one.
  public var nonce: UInt64

  static let command: UInt8 = 1

  public init(
    channel: ChannelName, uid: UInt32, banSeconds: UInt32, unixTime: UInt64, nonce: UInt64
  ) {
    self.channel = channel
    self.uid = uid
    self.banSeconds = banSeconds
    self.unixTime = unixTime
    self.nonce = nonce
  }

  /// True when `datagram` starts with the admin magic (whatever follows).
  public static func hasMagic(_ datagram: ArraySlice<UInt8>) -> Bool {
    AdminFrame.hasMagic(datagram)
  }

  /// The signed datagram.
  public func sealed(appID: AppID, certificate: [UInt8]) -> [UInt8] {
    AdminFrame.seal(self, appID: appID, certificate: certificate)
  }

  /// Parses `datagram` and checks that it is for `appID` and signed with `certificate`.
  /// The time window and replays are the server's to judge.
  public static func open(_ datagram: ArraySlice<UInt8>, appID: AppID, certificate: [UInt8])
    throws(AdminError) -> AdminKick
  {
    try AdminFrame.open(datagram, appID: appID, certificate: certificate)
  }
}

extension AdminKick: AdminCommand {
  var target: [UInt8] {
    var bytes = [UInt8(truncatingIfNeeded: channel.bytes.count)] + channel.bytes
    bytes.appendBigEndian(uid)
    return bytes
  }

  init?(target reader: inout ByteReader) {
    guard let bytes = try? reader.prefixed(lengthWidth: 1),
      let channel = try? ChannelName(validating: bytes), let uid = try? reader.u32()
    else { return nil }
    self.init(channel: channel, uid: uid, banSeconds: 0, unixTime: 0, nonce: 0)
  }
}

/// The admin datagram of `tether-edge kick --user-id`: end a user's login session with KICK
/// BANNED, and refuse its LOGINs for `banSeconds` more with LOGIN_REFUSE 7 NOT_AUTHORIZED.
/// Layout (docs/PROTOCOL.md, "Admin: KICK_USER"), as ``AdminKick`` with command 2 and a user
/// id instead of the channel and uid:
///
/// | offset | size | field |
/// |---:|---:|---|
/// | 0 | 4 | `54 41`, version 2, command 2 = KICK_USER |
/// | 4 | 1 | A: app id length, 1...64 |
/// | 5 | A | app id |
/// | 5+A | 1 | U: user id length, 1...64 |
/// | 6+A | U | user id |
/// | 6+A+U | 4 | ban seconds |
/// | 10+A+U | 8 | unix time, seconds |
/// | 18+A+U | 8 | nonce, random |
/// | 26+A+U | 32 | `PRF(K_admin, bytes 0 ..< 26+A+U, "tether2 admin")` (§12.14) |
public struct AdminKickUser: Equatable, Sendable {
  public var userID: UserID
  /// 0: kick only; otherwise the user id is refused this many seconds more.
  public var banSeconds: UInt32
  public var unixTime: UInt64
  public var nonce: UInt64

  static let command: UInt8 = 2

  public init(userID: UserID, banSeconds: UInt32, unixTime: UInt64, nonce: UInt64) {
    self.userID = userID
    self.banSeconds = banSeconds
    self.unixTime = unixTime
    self.nonce = nonce
  }

  /// The signed datagram.
  public func sealed(appID: AppID, certificate: [UInt8]) -> [UInt8] {
    AdminFrame.seal(self, appID: appID, certificate: certificate)
  }

  /// Parses `datagram` and checks that it is for `appID` and signed with `certificate`.
  public static func open(_ datagram: ArraySlice<UInt8>, appID: AppID, certificate: [UInt8])
    throws(AdminError) -> AdminKickUser
  {
    try AdminFrame.open(datagram, appID: appID, certificate: certificate)
  }
}

extension AdminKickUser: AdminCommand {
  var target: [UInt8] { [UInt8(truncatingIfNeeded: userID.bytes.count)] + userID.bytes }

  init?(target reader: inout ByteReader) {
    guard let bytes = try? reader.prefixed(lengthWidth: 1),
      let userID = try? UserID(validating: bytes)
    else { return nil }
    self.init(userID: userID, banSeconds: 0, unixTime: 0, nonce: 0)
  }
}

/// One admin request, of either command.
public enum AdminRequest: Equatable, Sendable {
  case kick(AdminKick)
  case kickUser(AdminKickUser)

  /// Parses `datagram` by its command byte and checks it as its type's `open` does.
  public static func open(_ datagram: ArraySlice<UInt8>, appID: AppID, certificate: [UInt8])
    throws(AdminError) -> AdminRequest
  {
    guard datagram.count > 3 else { throw .malformed }
    switch datagram[datagram.startIndex + 3] {
    case AdminKickUser.command:
      return .kickUser(try AdminKickUser.open(datagram, appID: appID, certificate: certificate))
    default:
      return .kick(try AdminKick.open(datagram, appID: appID, certificate: certificate))
    }
  }

  public var unixTime: UInt64 {
    switch self {
    case .kick(let kick): kick.unixTime
    case .kickUser(let kick): kick.unixTime
    }
  }

  public var nonce: UInt64 {
    switch self {
    case .kick(let kick): kick.nonce
    case .kickUser(let kick): kick.nonce
    }
  }
}

/// An admin command: what it acts on (its target, between the app id and the ban seconds)
/// and the fields of the tail, in the frame every command shares (``AdminFrame``).
protocol AdminCommand {
  static var command: UInt8 { get }
  var target: [UInt8] { get }
  var banSeconds: UInt32 { get set }
  var unixTime: UInt64 { get set }
  var nonce: UInt64 { get set }
  /// Reads the target (the tail's fields are set once they are read); nil if it is not one.
  init?(target reader: inout ByteReader)
}

/// What every admin datagram shares: the header (magic, version, command, app id) and the
/// tail (ban seconds, unix time, nonce, MAC over everything before it).
enum AdminFrame {
  static let magic: (UInt8, UInt8) = (0x54, 0x41)
  /// 2 since protocol version 2 (docs/PROTOCOL.md §12.14): the MAC is keyed with `K_admin`;
  /// a version 1 request (HMAC-SHA256 under the raw certificate) is malformed.
  static let version: UInt8 = 2
  static let macLength = 32

  static func hasMagic(_ datagram: ArraySlice<UInt8>) -> Bool {
    datagram.count >= 2 && datagram.first == magic.0
      && datagram[datagram.startIndex + 1] == magic.1
  }

  static func seal<Command: AdminCommand>(_ request: Command, appID: AppID, certificate: [UInt8])
    -> [UInt8]
  {
    var bytes: [UInt8] = [magic.0, magic.1, version, Command.command]
    bytes.append(UInt8(truncatingIfNeeded: appID.bytes.count))
    bytes.append(contentsOf: appID.bytes + request.target)
    bytes.appendBigEndian(request.banSeconds)
    bytes.appendBigEndian(request.unixTime)
    bytes.appendBigEndian(request.nonce)
    bytes.append(contentsOf: mac(bytes[...], certificate: certificate))
    return bytes
  }

  /// Parses a `Command` datagram of this version, then judges the app id and the MAC (in
  /// that order: a malformed datagram is malformed whatever its app).
  static func open<Command: AdminCommand>(
    _ datagram: ArraySlice<UInt8>, appID: AppID, certificate: [UInt8]
  ) throws(AdminError) -> Command {
    var reader = ByteReader(datagram)
    let header = try? (reader.u8(), reader.u8(), reader.u8(), reader.u8())
    guard let header, header == (magic.0, magic.1, version, Command.command),
      let app = try? reader.prefixed(lengthWidth: 1), var request = Command(target: &reader),
      let ban = try? reader.u32(), let time = try? reader.u64(), let nonce = try? reader.u64(),
      reader.rest.count == macLength
    else { throw .malformed }
    guard app.elementsEqual(appID.bytes) else { throw .wrongApp }
    let signed = datagram.prefix(datagram.count - macLength)
    // sodium_memcmp: the MAC is compared in constant time.
    guard SodiumCrypto().constantTimeEqual(mac(signed, certificate: certificate)[...], reader.rest)
    else { throw .badMAC }
    request.banSeconds = ban
    request.unixTime = time
    request.nonce = nonce
    return request
  }

  /// `PRF(K_admin, bytes, "tether2 admin")`: `K_admin` is the certificate's (§12.3), so a
  /// token key or a reset value never signs a request. Empty (verifies nothing) for an
  /// empty certificate, which has no keys.
  private static func mac(_ bytes: ArraySlice<UInt8>, certificate: [UInt8]) -> [UInt8] {
    guard let keys = try? CertificateKeys(certificate: certificate) else { return [] }
    return SodiumCrypto().derive(key: keys.admin, input: bytes, label: "tether2 admin")
  }
}

/// Why an admin datagram was not taken.
public enum AdminError: Error, Equatable, Sendable {
  /// Not a well-formed admin datagram of this version.
  case malformed
  /// For another app id.
  case wrongApp
  /// The MAC does not verify with this server's certificate.
  case badMAC
  /// Its time is more than 60 s away from the server's clock.
  case outOfTimeWindow
  /// The same request (nonce) was already taken.
  case replayed
}

/// The server's one-byte answer to an admin datagram.
public enum AdminStatus: UInt8, Sendable, CaseIterable {
  /// The member was in the channel (the user was logged in) and was removed.
  case kicked = 0
  /// No session holds that (channel, uid), or the user id; a ban, if asked for, is still in
  /// place.
  case noSuchMember = 1
  /// The request was not taken (bad MAC, wrong app, out of the time window, replayed).
  case refused = 2

  /// How `tether-edge kick` prints it.
  public var text: String {
    switch self {
    case .kicked: "kicked"
    case .noSuchMember: "no such member"
    case .refused: "refused"
    }
  }
}
