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

  /// Past a rekey limit of §12.7 (or a hard one): what this side sealed or failed to open,
  /// or the highest counter it opened from the other side.
  var rekeyDue: Bool {
    usage.status != .fresh || window.highest >= usage.limits.rekeyAfterMessages
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
    let start = out.count
    grow(&out, by: Self.headerLength)
    payload.withUnsafeBytes { append($0, to: &out) }
    try seal(&out, from: start)
  }

  /// Seals the DATA datagram written at the end of `out` from `start`: the caller wrote the
  /// payload after room for the header (17 bytes, any values); the header is written here,
  /// the payload sealed in place and the tag appended. On a refusal `out` is cut back to
  /// `start`.
  /// - Throws: ``Refusal/exhausted`` when the key may seal no more (or the payload is
  ///   empty).
  @inline(never)
  public mutating func seal(_ out: inout [UInt8], from start: Int) throws(Refusal) {
    let h = Self.headerLength
    guard start >= 0, out.count - start > h, let counter = usage.nextSendCounter() else {
      truncate(&out, to: start)
      throw .exhausted
    }
    grow(&out, by: Cipher.tagLength)
    let id = sessionID
    let sealed = out.withUnsafeMutableBytes { bytes in
      let datagram = piece(bytes, start, bytes.count - start)
      datagram[0] = Self.kind
      putBigEndian(id, width: 8, into: datagram, at: 1)
      putBigEndian(counter, width: 8, into: datagram, at: 9)
      return sending.seal(counter: counter, inPlace: datagram, adCount: h)
    }
    guard sealed else {
      truncate(&out, to: start)
      throw .exhausted
    }
  }

  /// Opens one DATA datagram and appends its payload to `out`. Whatever it throws, nothing
  /// of the session changed but a count (the window moves only after a datagram opens).
  public mutating func open(_ datagram: ArraySlice<UInt8>, into out: inout [UInt8])
    throws(Refusal)
  {
    let start = out.count
    grow(&out, by: max(0, datagram.count - Self.headerLength - Cipher.tagLength))
    let opened: Refusal? = out.withUnsafeMutableBytes { out in
      datagram.withUnsafeBytes { datagram in
        do throws(Refusal) {
          try open(datagram, into: piece(out, start, out.count - start))
          return nil
        } catch { return error }
      }
    }
    if let opened {
      truncate(&out, to: start)
      throw opened
    }
  }

  /// Opens one DATA datagram into `out`, which has room for exactly its payload (the
  /// datagram less 33 bytes). Whatever it throws, nothing of the session changed but a
  /// count (the window moves only after a datagram opens).
  @inline(never)
  public mutating func open(
    _ datagram: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
  )
    throws(Refusal)
  {
    let h = Self.headerLength
    guard datagram.count > h + Cipher.tagLength, datagram[0] == Self.kind,
      out.count == datagram.count - h - Cipher.tagLength,
      bigEndian(datagram, at: 1, width: 8) == sessionID
    else { throw .malformed }
    let counter = bigEndian(datagram, at: 9, width: 8)
    guard usage.mayOpen(counter: counter), window.check(counter) == .fresh else {
      replayed += 1
      throw .replayed
    }
    guard
      receiving.open(
        counter: counter, ad: piece(datagram, 0, h),
        sealed: piece(datagram, h, datagram.count - h), into: out)
    else {
      usage.recordFailedOpen()
      unopened += 1
      throw .unopened
    }
    window.accept(counter)
  }
}

// The device's byte-array helpers. Bytes are copied with one specialization of
// `append(contentsOf:)` (a raw buffer's), which every bulk write goes through; `truncate`
// stays a loop over `popLast` (a `removeLast(_:)` or `removeAll(keepingCapacity:)` of its
// own measured 270-280 bytes of aarch64 text), and single fields over `appendByte`.

/// `count` zero bytes appended to `bytes`, 64 a copy.
@inline(never)
func grow(_ bytes: inout [UInt8], by count: Int) {
  let zeros: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
    0, 0, 0, 0, 0, 0, 0, 0
  )
  var left = count
  while left > 0 {
    let chunk = min(left, 64)
    withUnsafeBytes(of: zeros) {
      append(UnsafeRawBufferPointer(rebasing: $0[..<chunk]), to: &bytes)
    }
    left -= chunk
  }
}

/// `source` appended to `bytes`: one copy, not a call per byte (every byte the device
/// wrote went through `appendByte`: 30 % of the library's own CPU in the churn window of
/// `make bench`, issue 26).
@inline(never)
package func append(_ source: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
  bytes.append(contentsOf: source)
}

/// `bytes` cut back to its first `count` bytes (nothing if it is not longer): one call, not
/// one per byte (emptying each entry point's output popped every byte of its datagrams: 1 %
/// of the device's samples in the churn window of `make bench`, issue 26). The range form:
/// `removeLast(_:)` costs twice its text in the Embedded library.
@inline(never)
func truncate(_ bytes: inout [UInt8], to count: Int) {
  if bytes.count > count { bytes.removeSubrange(count...) }
}
