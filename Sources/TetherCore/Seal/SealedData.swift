// SPDX-License-Identifier: Apache-2.0
/// One session's sealed datagrams (DATA, docs/PROTOCOL.md §12.7), for either side: seals
/// what it sends under its send key with a counter that never repeats, and opens what it
/// receives under its receive key only if the counter may be opened, so that a datagram
/// that fails to open, repeats, or is too old changes nothing but a count.
///
/// `Cipher` is the seam (``DatagramCipher``): libsodium in the driver and the edge, a
/// stand-in in tests.
public struct SealedData<Cipher: DatagramCipher> {
  /// The first byte of every DATA datagram.
  public static var kind: UInt8 { 0x07 }
  /// Kind, session id and counter: the associated data.
  public static var headerLength: Int { 17 }

  public let sessionID: UInt64
  let sending: Cipher
  let receiving: Cipher
  /// Both keys of the handshake: what was sealed and how many datagrams failed to open.
  public private(set) var usage: KeyUsage
  /// The counters opened from the other side.
  public private(set) var window = ReplayWindow()
  /// Datagrams dropped unopened: a repeated or too old counter, or one past the limits.
  public private(set) var replayed: UInt64 = 0
  /// Datagrams whose tag did not verify (also counted in ``usage``).
  public private(set) var unopened: UInt64 = 0

  public init(sessionID: UInt64, sending: Cipher, receiving: Cipher, limits: KeyLimits = .standard)
  {
    self.sessionID = sessionID
    self.sending = sending
    self.receiving = receiving
    usage = KeyUsage(limits: limits)
  }

  /// Why a datagram was not sealed or opened.
  public enum Refusal: Error, Equatable, Sendable {
    /// Not a DATA datagram of this session, or too short to hold a header, a byte and a tag.
    case malformed
    /// Its counter repeats one opened, is too old for the window, or is past the limits.
    case replayed
    /// Its tag did not verify under the receive key.
    case unopened
    /// The send key has sealed all it may (or the cipher refused): a new handshake is due.
    case exhausted
  }

  /// Appends one DATA datagram carrying `payload` to `out`.
  /// - Throws: ``Refusal/exhausted`` when the key may seal no more.
  public mutating func seal(_ payload: ArraySlice<UInt8>, into out: inout [UInt8])
    throws(Refusal)
  {
    guard !payload.isEmpty, let counter = usage.nextSendCounter() else { throw .exhausted }
    let start = out.count
    out.append(Self.kind)
    out.appendBigEndian(sessionID, byteCount: 8)
    out.appendBigEndian(counter, byteCount: 8)
    // The header just written is the associated data; the cipher appends after it.
    guard sending.seal(counter: counter, plaintext: payload, appendingTo: &out, adStart: start)
    else {
      out.removeSubrange(start...)
      throw .exhausted
    }
  }

  /// Opens one DATA datagram and appends its payload to `out`. Whatever it throws, nothing
  /// of the session changed but a count (the window moves only after a datagram opens).
  public mutating func open(_ datagram: ArraySlice<UInt8>, into out: inout [UInt8])
    throws(Refusal)
  {
    let h = Self.headerLength
    guard datagram.count > h + Cipher.tagLength, datagram.first == Self.kind else {
      throw .malformed
    }
    let base = datagram.startIndex
    guard bigEndian(datagram, at: base + 1, width: 8) == sessionID else { throw .malformed }
    let counter = bigEndian(datagram, at: base + 9, width: 8)
    guard usage.mayOpen(counter: counter), window.check(counter) == .fresh else {
      replayed += 1
      throw .replayed
    }
    guard
      receiving.open(
        counter: counter, ad: datagram[base..<base + h], sealed: datagram[(base + h)...],
        into: &out)
    else {
      usage.recordFailedOpen()
      unopened += 1
      throw .unopened
    }
    window.accept(counter)
  }
}
