// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What the edge remembers of a handshake between its RESPONSE and the device's CONFIRM,
/// carried by the device inside the sealed ticket instead of kept by the edge
/// (docs/PROTOCOL.md §12.6): the edge holds no per-session state before the device has
/// shown it receives at its address. 160 bytes once encoded; ``TicketSealer`` seals them.
public struct Ticket: Equatable, Sendable {
  /// When the CONFIRM stops being accepted: the edge's monotonic clock, in milliseconds.
  public var expiresAtMs: UInt64
  /// The INIT's source: only a CONFIRM from there is taken.
  public var address: IPEndpoint
  /// `S`, the session secret (32 bytes), from which the data keys come.
  public var sessionSecret: [UInt8]
  /// The token's public header (11 bytes: version, key id, expiry).
  public var tokenHeader: [UInt8]
  /// The token's grant: kind, channel name or user id, and the token's uid.
  public var grant: TokenGrant
  /// The uid the request asked for (0: the edge assigns; 0 for a login).
  public var uidAsked: UInt32
  /// The request's flags (bit 0 rejoin or RELOGIN, bit 1 resume).
  public var flags: UInt8
  /// The session to resume, when the request's proof of it verified.
  public var resume: SessionID?
  /// The INIT was charged to its source's join budget (it came under load with a valid
  /// `mac2`), so the CONFIRM charges nothing more (§12.6, CONFIRM step 5). The edge's own
  /// byte: the device never reads a ticket.
  public var joinBudgetCharged: Bool

  public init(
    expiresAtMs: UInt64, address: IPEndpoint, sessionSecret: [UInt8], tokenHeader: [UInt8],
    grant: TokenGrant, uidAsked: UInt32, flags: UInt8, resume: SessionID?,
    joinBudgetCharged: Bool = false
  ) {
    self.expiresAtMs = expiresAtMs
    self.address = address
    self.sessionSecret = sessionSecret
    self.tokenHeader = tokenHeader
    self.grant = grant
    self.uidAsked = uidAsked
    self.flags = flags
    self.resume = resume
    self.joinBudgetCharged = joinBudgetCharged
  }

  static let encodedBytes = 160
  static let secretBytes = 32
  static let headerBytes = 11
  static let reservedBytes = 7

  /// The 160-byte plaintext, in §12.6's order.
  func encoded() -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(Self.encodedBytes)
    out.appendBigEndian(expiresAtMs)
    out.append(contentsOf: address.bytes)
    out.append(contentsOf: sessionSecret)
    out.append(contentsOf: tokenHeader)
    let (kind, name, tokenUID) = grant.fields
    out.append(kind)
    TokenV2Layout.appendName(name, to: &out)
    out.appendBigEndian(tokenUID)
    out.appendBigEndian(uidAsked)
    out.append(flags)
    out.append(contentsOf: resume?.bytes ?? [UInt8](repeating: 0, count: 8))
    out.append(joinBudgetCharged ? 1 : 0)
    out.append(contentsOf: repeatElement(0, count: Self.reservedBytes))
    return out
  }

  /// Reads the plaintext strictly; nil if any field breaks §12.6's layout (a ticket that
  /// opened was sealed by this edge, so that would be the edge's own bug).
  init?(decoding plaintext: [UInt8]) {
    guard plaintext.count == Self.encodedBytes else { return nil }
    var reader = ByteReader(plaintext[...])
    guard let expiresAtMs = try? reader.u64(),
      let ip = try? reader.bytes(16), let port = try? reader.u16(),
      let address = IPEndpoint(ip: Array(ip), port: port),
      let secret = try? reader.bytes(Self.secretBytes),
      let header = try? reader.bytes(Self.headerBytes),
      let kind = try? reader.u8(), let name = try? reader.bytes(TokenV2Layout.nameField + 1),
      let tokenUID = try? reader.u32(),
      let grant = TokenGrant(kind: kind, name: name, uid: tokenUID),
      let uidAsked = try? reader.u32(), let flags = try? reader.u8(),
      let resume = try? reader.bytes(8), let charged = try? reader.u8(), charged <= 1,
      let reserved = try? reader.bytes(Self.reservedBytes), reserved.allSatisfy({ $0 == 0 })
    else { return nil }
    self.init(
      expiresAtMs: expiresAtMs, address: address, sessionSecret: Array(secret),
      tokenHeader: Array(header), grant: grant, uidAsked: uidAsked, flags: flags,
      resume: resume.allSatisfy { $0 == 0 } ? nil : SessionID(bytes: resume),
      joinBudgetCharged: charged == 1)
  }
}
