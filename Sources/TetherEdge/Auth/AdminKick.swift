import Crypto
import TetherCore

/// The admin datagram of `tether-edge kick`: remove a member from a channel, and refuse
/// it for `banSeconds` more (0: a plain kick). It travels on the server's own UDP port,
/// told apart from the client protocol by its magic, "TA". Layout (docs/PROTOCOL.md,
/// "Admin: KICK"), every integer big-endian:
///
/// | offset | size | field |
/// |---:|---:|---|
/// | 0 | 2 | magic `54 41` ("TA") |
/// | 2 | 1 | version, 1 |
/// | 3 | 1 | command, 1 = KICK |
/// | 4 | 1 | A: app id length, 1...64 |
/// | 5 | A | app id |
/// | 5+A | 1 | C: channel length, 1...63 |
/// | 6+A | C | channel |
/// | 6+A+C | 4 | uid |
/// | 10+A+C | 4 | ban seconds |
/// | 14+A+C | 8 | unix time, seconds |
/// | 22+A+C | 8 | nonce, random |
/// | 30+A+C | 32 | HMAC-SHA256(app certificate, bytes 0 ..< 30+A+C) |
public struct AdminKick: Equatable, Sendable {
  public var channel: ChannelName
  public var uid: UInt32
  /// 0: kick only; otherwise the (channel, uid) is refused this many seconds more.
  public var banSeconds: UInt32
  /// When the request was made (unix seconds): the server takes it within ±60 s.
  public var unixTime: UInt64
  /// Tells two requests apart, so the server can refuse a replayed one.
  public var nonce: UInt64

  static let magic: (UInt8, UInt8) = (0x54, 0x41)
  static let version: UInt8 = 1
  static let kickCommand: UInt8 = 1
  static let macLength = 32

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
    datagram.count >= 2 && datagram.first == magic.0
      && datagram[datagram.startIndex + 1] == magic.1
  }

  /// The signed datagram.
  public func sealed(appID: AppID, certificate: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = [Self.magic.0, Self.magic.1, Self.version, Self.kickCommand]
    bytes.append(UInt8(truncatingIfNeeded: appID.bytes.count))
    bytes.append(contentsOf: appID.bytes)
    bytes.append(UInt8(truncatingIfNeeded: channel.bytes.count))
    bytes.append(contentsOf: channel.bytes)
    bytes.appendBigEndian(uid)
    bytes.appendBigEndian(banSeconds)
    bytes.appendBigEndian(unixTime)
    bytes.appendBigEndian(nonce)
    bytes.append(contentsOf: Self.mac(bytes[...], certificate: certificate))
    return bytes
  }

  /// Parses `datagram` and checks that it is for `appID` and signed with `certificate`.
  /// The time window and replays are the server's to judge.
  public static func open(_ datagram: ArraySlice<UInt8>, appID: AppID, certificate: [UInt8])
    throws(AdminError) -> AdminKick
  {
    var reader = ByteReader(datagram)
    let header = try? (reader.u8(), reader.u8(), reader.u8(), reader.u8())
    guard let header, header == (magic.0, magic.1, version, kickCommand),
      let app = try? reader.prefixed(lengthWidth: 1),
      let channelBytes = try? reader.prefixed(lengthWidth: 1),
      let channel = try? ChannelName(validating: channelBytes), let uid = try? reader.u32(),
      let ban = try? reader.u32(), let time = try? reader.u64(), let nonce = try? reader.u64(),
      reader.rest.count == macLength
    else { throw .malformed }
    guard app.elementsEqual(appID.bytes) else { throw .wrongApp }
    let signed = datagram.prefix(datagram.count - macLength)
    guard TokenSigner.constantTimeEqual(mac(signed, certificate: certificate), Array(reader.rest))
    else { throw .badMAC }
    return AdminKick(channel: channel, uid: uid, banSeconds: ban, unixTime: time, nonce: nonce)
  }

  private static func mac(_ bytes: ArraySlice<UInt8>, certificate: [UInt8]) -> [UInt8] {
    Array(HMAC<SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: certificate)))
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
  /// The member was in the channel and was removed.
  case kicked = 0
  /// No session holds that (channel, uid); a ban, if asked for, is still in place.
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
