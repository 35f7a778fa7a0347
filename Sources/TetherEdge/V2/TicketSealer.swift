// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Seals and opens tickets (docs/PROTOCOL.md §12.6): `AEAD(K_ticket, 0^4 ‖ session id, ad =
/// empty, plaintext 160)`, 176 bytes. `K_ticket` is 32 random bytes drawn at each start and
/// never written anywhere, so a restart invalidates every ticket, as a stateless edge wants.
///
/// The nonce is the session id, which ``SessionIDIssuer`` never issues twice in one epoch;
/// the sealer keeps one key per epoch and draws a new one (wiping the old) on the first id
/// of a new epoch, so no (key, nonce) pair repeats. A ticket of another epoch never opens.
public struct TicketSealer<Crypto: SessionCrypto> {
  private let crypto: Crypto
  /// The epoch whose ids this key seals.
  public private(set) var epoch: UInt32
  private var key: [UInt8]

  /// The sealed ticket's size: the plaintext and the tag.
  public static var sealedBytes: Int { Ticket.encodedBytes + 16 }
  static var keyBytes: Int { 32 }

  /// Draws `K_ticket` (32 random bytes through `crypto`) for the ids of `epoch`.
  public init(crypto: Crypto, epoch: UInt32) {
    self.crypto = crypto
    self.epoch = epoch
    key = crypto.randomBytes(count: Self.keyBytes)
  }

  /// `ticket` sealed for the session `id` (176 bytes).
  public mutating func seal(_ ticket: Ticket, id: SessionID) -> [UInt8] {
    if id.epoch != epoch {
      crypto.wipe(&key)
      key = crypto.randomBytes(count: Self.keyBytes)
      epoch = id.epoch
    }
    var plaintext = ticket.encoded()
    defer { crypto.wipe(&plaintext) }
    return crypto.aeadSeal(key: key, nonce: Self.nonce(id), ad: [], plaintext: plaintext[...])
  }

  /// The ticket a CONFIRM carries for `id`, received from `source` at `now`.
  /// - Throws: ``TicketRefusal``, the first that applies, in §12.6's order (after the epoch,
  ///   the ticket must open, be unexpired and name `source`). The CONFIRM is dropped
  ///   unanswered for each: its source is not validated.
  public func open(
    _ sealed: ArraySlice<UInt8>, id: SessionID, from source: IPEndpoint, now: Instant
  )
    throws(TicketRefusal) -> Ticket
  {
    guard id.epoch == epoch else { throw .otherEpoch }
    guard sealed.count == Self.sealedBytes,
      var plaintext = crypto.aeadOpen(key: key, nonce: Self.nonce(id), ad: [], sealed: sealed)
    else { throw .unopened }
    defer { crypto.wipe(&plaintext) }
    guard let ticket = Ticket(decoding: plaintext) else { throw .malformed }
    guard now.nanoseconds / 1_000_000 < ticket.expiresAtMs else { throw .expired }
    guard ticket.address == source else { throw .wrongAddress }
    return ticket
  }

  /// `0^4 ‖ session id`.
  static func nonce(_ id: SessionID) -> [UInt8] { [0, 0, 0, 0] + id.bytes }
}

/// Why a CONFIRM's ticket was not taken (each: dropped, counted, nothing answered).
public enum TicketRefusal: Error, Equatable, Sendable {
  /// The session id is of another epoch (another start of the edge, or before the serials
  /// ran out): its key is gone.
  case otherEpoch
  /// Not 176 bytes, or it does not open under `K_ticket` with this session id.
  case unopened
  /// It opened but its plaintext breaks the layout (this edge sealed it: an edge bug).
  case malformed
  /// Its lifetime has passed.
  case expired
  /// The CONFIRM came from another address than the INIT: the device has not shown it
  /// receives there.
  case wrongAddress
}
