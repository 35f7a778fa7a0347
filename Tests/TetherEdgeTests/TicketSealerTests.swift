// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSodium

@testable import TetherEdge

/// Tickets (docs/PROTOCOL.md §12.6): the 160-byte plaintext in its order, sealed under
/// `K_ticket` with the session id as nonce, opened only unexpired, from its own address,
/// within its epoch.
struct TicketSealerTests {
  static let device = IPEndpoint(ipv4: [192, 0, 2, 1], port: 7000)!
  static let epoch: UInt32 = 0x0A0B_0C0D
  static let id = SessionID(epoch: epoch, serial: 7)

  static func ticket(resume: SessionID? = nil, charged: Bool = false) throws -> Ticket {
    Ticket(
      expiresAtMs: 10_000, address: device, sessionSecret: [UInt8](repeating: 0x53, count: 32),
      tokenHeader: [2, 0x12, 0x34, 0, 0, 0, 0, 0x71, 0x3F, 0xB3, 0],
      grant: .channel(try ChannelName(validating: "room".utf8), uid: 7), uidAsked: 9, flags: 3,
      resume: resume, joinBudgetCharged: charged)
  }

  static func at(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

  // MARK: - Layout and sealing

  /// The plaintext, field by field at §12.6's offsets.
  @Test func plaintext_isTheTablesLayout() throws {
    let resume = SessionID(epoch: 1, serial: 2)
    let bytes = try Self.ticket(resume: resume, charged: true).encoded()
    #expect(bytes.count == 160)
    #expect(bytes[0..<8] == [0, 0, 0, 0, 0, 0, 0x27, 0x10][...])
    #expect(bytes[8..<24] == ([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, 1])[...])
    #expect(bytes[24..<26] == [0x1B, 0x58][...])
    #expect(bytes[26..<58].allSatisfy { $0 == 0x53 })
    #expect(bytes[58..<69] == [2, 0x12, 0x34, 0, 0, 0, 0, 0x71, 0x3F, 0xB3, 0][...])
    #expect(bytes[69] == 1 && bytes[70] == 4 && bytes[71..<75] == Array("room".utf8)[...])
    #expect(bytes[75..<135].allSatisfy { $0 == 0 })
    #expect(bytes[135..<139] == [0, 0, 0, 7][...] && bytes[139..<143] == [0, 0, 0, 9][...])
    #expect(bytes[143] == 3 && bytes[144..<152] == resume.bytes[...])
    #expect(bytes[152] == 1 && bytes[153..<160].allSatisfy { $0 == 0 })
    #expect(Ticket(decoding: bytes) == (try Self.ticket(resume: resume, charged: true)))
    #expect(try Self.ticket().encoded()[152] == 0)
  }

  /// Sealed is `AEAD(K_ticket, 0^4 ‖ session id, ad = empty, plaintext)`: opened here with
  /// the key drawn from the same seeded stream.
  @Test func sealed_isTheAEADOfThePlaintext_underTheSessionIDNonce() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(), id: Self.id)
    #expect(sealed.count == 176 && TicketSealer<SeededCrypto>.sealedBytes == 176)
    let key = SeededCrypto(seed: 7).randomBytes(count: 32)
    let nonce: [UInt8] = [0, 0, 0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 7]
    let opened = SodiumCrypto().aeadOpen(key: key, nonce: nonce, ad: [], sealed: sealed[...])
    #expect(opened == (try Self.ticket().encoded()))
  }

  @Test func aTicket_opensAsSealed_fromItsAddress_beforeItExpires() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(resume: SessionID(epoch: 3, serial: 4)), id: Self.id)
    let opened = try sealer.open(sealed[...], id: Self.id, from: Self.device, now: Self.at(9_999))
    #expect(opened == (try Self.ticket(resume: SessionID(epoch: 3, serial: 4))))
    let login = Ticket(
      expiresAtMs: 1, address: Self.device, sessionSecret: [UInt8](repeating: 1, count: 32),
      tokenHeader: [UInt8](repeating: 2, count: 11),
      grant: .user(try UserID(validating: String(repeating: "u", count: 64).utf8)), uidAsked: 0,
      flags: 0, resume: nil)
    let again = sealer.seal(login, id: SessionID(epoch: Self.epoch, serial: 8))
    #expect(
      try sealer.open(
        again[...], id: SessionID(epoch: Self.epoch, serial: 8), from: Self.device, now: .zero)
        == login)
  }

  // MARK: - Refusals, in order

  @Test func anotherEpoch_isRefusedFirst() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(), id: Self.id)
    let other = SessionID(epoch: Self.epoch + 1, serial: 7)
    #expect(throws: TicketRefusal.otherEpoch) {
      try sealer.open(sealed[...], id: other, from: Self.device, now: .zero)
    }
  }

  /// Another serial (the nonce), a flipped bit anywhere, a wrong size: it does not open.
  @Test func anAlteredTicket_orAnotherSessionID_doesNotOpen() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(), id: Self.id)
    let next = SessionID(epoch: Self.epoch, serial: 8)
    #expect(throws: TicketRefusal.unopened) {
      try sealer.open(sealed[...], id: next, from: Self.device, now: .zero)
    }
    for offset in sealed.indices {
      var flipped = sealed
      flipped[offset] ^= 0x40
      #expect(throws: TicketRefusal.unopened) {
        try sealer.open(flipped[...], id: Self.id, from: Self.device, now: .zero)
      }
    }
    #expect(throws: TicketRefusal.unopened) {
      try sealer.open(sealed.dropLast(), id: Self.id, from: Self.device, now: .zero)
    }
  }

  @Test func anExpiredTicket_isRefused() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(), id: Self.id)
    #expect(throws: TicketRefusal.expired) {
      try sealer.open(sealed[...], id: Self.id, from: Self.device, now: Self.at(10_000))
    }
  }

  /// Only the INIT's address may confirm: another port or another host is refused.
  @Test func anotherAddress_isRefused() throws {
    var sealer = TicketSealer(crypto: SeededCrypto(seed: 7), epoch: Self.epoch)
    let sealed = sealer.seal(try Self.ticket(), id: Self.id)
    for source in [
      IPEndpoint(ipv4: [192, 0, 2, 1], port: 7001)!, IPEndpoint(ipv4: [192, 0, 2, 2], port: 7000)!,
      IPEndpoint(ip: [UInt8](repeating: 0, count: 10) + [0, 0, 192, 0, 2, 1], port: 7000)!,
    ] {
      #expect(throws: TicketRefusal.wrongAddress) {
        try sealer.open(sealed[...], id: Self.id, from: source, now: .zero)
      }
    }
  }

  /// A new epoch brings a new key (32 more bytes drawn); the old epoch's tickets are dead.
  @Test func aNewEpoch_drawsANewKey() throws {
    let crypto = SeededCrypto(seed: 7)
    var sealer = TicketSealer(crypto: crypto, epoch: Self.epoch)
    let old = sealer.seal(try Self.ticket(), id: Self.id)
    #expect(crypto.drawn == 32)
    let newID = SessionID(epoch: 99, serial: 7)
    let new = sealer.seal(try Self.ticket(), id: newID)
    #expect(crypto.drawn == 64 && sealer.epoch == 99 && new != old)
    #expect(
      try sealer.open(new[...], id: newID, from: Self.device, now: .zero) == (try Self.ticket()))
    #expect(throws: TicketRefusal.otherEpoch) {
      try sealer.open(old[...], id: Self.id, from: Self.device, now: .zero)
    }
  }

  /// The decoder is strict: reserved bytes, name filling, grant and the charged byte (0 or
  /// 1) are checked.
  @Test(arguments: [153, 159, 80, 69, 152])
  func aPlaintextBreakingTheLayout_doesNotDecode(offset: Int) throws {
    var bytes = try Self.ticket().encoded()
    bytes[offset] = offset == 69 ? 3 : (offset == 152 ? 2 : 1)
    #expect(Ticket(decoding: bytes) == nil)
    #expect(Ticket(decoding: bytes.dropLast() + []) == nil)
  }

  // MARK: - Addresses

  @Test func endpoints_ofSocketAddresses_areIPv6OrV4Mapped() throws {
    let v4 = try SocketAddress(parsing: "192.0.2.1:7000").peer
    #expect(IPEndpoint(peer: v4) == Self.device)
    let v6 = try SocketAddress(parsing: "[2001:db8::1]:443").peer
    let ip = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
    #expect(IPEndpoint(peer: v6) == IPEndpoint(ip: ip, port: 443))
    #expect(IPEndpoint(peer: PeerAddress(bytes: [0xC1, 0, 1])!) == nil)
    #expect(Self.device.bytes.count == 18 && Self.device.bytes.suffix(2) == [0x1B, 0x58])
    #expect(IPEndpoint(ipv4: [1, 2, 3], port: 1) == nil && IPEndpoint(ip: [1], port: 1) == nil)
  }
}
