// SPDX-License-Identifier: Apache-2.0
/// What protocol version 2 carries in clear that names a device's session (docs/PROTOCOL.md
/// §12): the key a shared socket hands a datagram on by. The edge's answers to a handshake
/// (RESPONSE, COOKIE_REPLY, REFUSE_CLEAR, REFUSE_SEALED) echo the `N_d` of the INIT they
/// answer at bytes 1 …; DATA and RESET carry the session id at bytes 1 ..< 9. A session is
/// known by what it sent: each INIT's `N_d` (bytes 2 … of the INIT), each CONFIRM's and
/// DATA's session id (bytes 1 ..< 9). A nonce is keyed by its first 8 bytes (random: two
/// sessions' collide once in 2^64, and a datagram handed to the wrong session is dropped
/// by its layer, as one of another session always was).
enum ClearKey {
  /// The key of a datagram the edge sent; nil for one that names no session (too short, a
  /// kind the edge does not send).
  static func received(_ datagram: ArraySlice<UInt8>) -> UInt64? {
    guard datagram.count >= 9, let kind = datagram.first, kind >= 0x02, kind <= 0x08,
      kind != 0x03
    else { return nil }
    return key(datagram, at: 1)
  }

  /// The key a datagram the session sends makes known, and whether it is a nonce (an
  /// INIT's) rather than a session id; nil for any other datagram.
  static func sent(_ datagram: ArraySlice<UInt8>) -> (key: UInt64, isNonce: Bool)? {
    switch datagram.first {
    case 0x01 where datagram.count >= 10: (key(datagram, at: 2), true)
    case 0x03, 0x07: datagram.count >= 9 ? (key(datagram, at: 1), false) : nil
    default: nil
    }
  }

  /// The 8 bytes at `offset` (the caller checked they are there), big-endian.
  private static func key(_ datagram: ArraySlice<UInt8>, at offset: Int) -> UInt64 {
    datagram.withUnsafeBytes {
      UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
  }
}

/// The keys a session's datagrams on a shared socket may come back under: the nonces of
/// its last two INITs (the device takes answers to its current and previous attempt only,
/// §12.5) and its last four session ids (the confirmed one, a CONFIRM's, and those still
/// in flight across a rekey or a resume). Each the most recent first; 0: none.
struct RouteKeys {
  private(set) var nonces: (UInt64, UInt64) = (0, 0)
  private(set) var ids: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

  /// Records the key a sent datagram makes known: the key to add to the socket's table and
  /// the one it pushes out (0: none); nil when the table need not change (the key is held).
  mutating func learn(_ key: UInt64, isNonce: Bool) -> (added: UInt64, removed: UInt64)? {
    guard key != 0 else { return nil }
    if isNonce {
      if key == nonces.0 { return nil }
      if key == nonces.1 {
        nonces = (key, nonces.0)
        return nil
      }
      let removed = nonces.1
      nonces = (key, nonces.0)
      return (key, removed)
    }
    if key == ids.0 { return nil }  // the common case: one more datagram of the session
    // Moved to the front, the others keeping their order.
    if key == ids.1 {
      ids = (key, ids.0, ids.2, ids.3)
      return nil
    }
    if key == ids.2 {
      ids = (key, ids.0, ids.1, ids.3)
      return nil
    }
    if key == ids.3 {
      ids = (key, ids.0, ids.1, ids.2)
      return nil
    }
    let removed = ids.3
    ids = (key, ids.0, ids.1, ids.2)
    return (key, removed)
  }

  /// Calls `body` with every key held.
  func visit(_ body: (UInt64) -> Void) {
    for index in 0..<6 {
      let key =
        switch index {
        case 0: nonces.0
        case 1: nonces.1
        case 2: ids.0
        case 3: ids.1
        case 4: ids.2
        default: ids.3
        }
      if key != 0 { body(key) }
    }
  }
}

/// A shared socket's keys (``ClearKey``) and the slot of the connection each names: an
/// open-addressing hash table (linear probing, deletion by backward shift), as
/// ``MemberIndex`` is, but up to three quarters full: at 100,000 sessions of some three keys
/// each it is 8 MiB (16 bytes an entry), where half full would be twice that. Its entries are one allocation of its own, reached by
/// pointer (no array code, no bounds check per probe: the mask keeps every index inside),
/// which its owner frees (``free()``); a copy must not outlive it.
struct RouteTable {
  private struct Entry {
    var key: UInt64
    /// The connection's slot; negative: empty.
    var slot: Int32
  }

  private var entries: UnsafeMutablePointer<Entry>?
  /// The capacity (a power of two) minus one.
  private var mask = -1
  /// Keys held.
  private(set) var count = 0

  /// The slot of the connection `key` names, if any.
  func find(_ key: UInt64) -> Int32? {
    guard let entries else { return nil }
    let index = position(of: key, in: entries)
    return entries[index].slot >= 0 ? entries[index].slot : nil
  }

  /// Makes room for `wanted` keys at most three quarters full. A connection joining the
  /// socket reserves for the keys a session holds in steady state; one that holds more for
  /// a while (a rejoin's two nonces beside its ids) may grow it on a send, which doubles it,
  /// so that happens a few times in a process's life, never per datagram.
  mutating func reserve(_ wanted: Int) {
    let capacity = mask + 1
    guard 4 * wanted > 3 * capacity else { return }
    var size = max(16, capacity)
    while 3 * size < 4 * wanted { size *= 2 }
    let old = entries
    let fresh = UnsafeMutablePointer<Entry>.allocate(capacity: size)
    fresh.initialize(repeating: Entry(key: 0, slot: -1), count: size)
    entries = fresh
    mask = size - 1
    guard let old else { return }
    for index in 0..<capacity where old[index].slot >= 0 {
      fresh[position(of: old[index].key, in: fresh)] = old[index]
    }
    old.deallocate()
  }

  /// `key` names the connection in `slot` (again, or instead of another).
  mutating func set(_ key: UInt64, to slot: Int32) {
    reserve(count + 1)
    guard let entries else { return }
    let index = position(of: key, in: entries)
    if entries[index].slot < 0 { count += 1 }
    entries[index] = Entry(key: key, slot: slot)
  }

  /// Forgets `key` if it names the connection in `slot`.
  mutating func remove(_ key: UInt64, of slot: Int32) {
    guard let entries else { return }
    var hole = position(of: key, in: entries)
    guard slot >= 0, entries[hole].slot == slot else { return }
    count -= 1
    // Moves back every later entry of the run that may no longer be found past the hole.
    var next = hole
    while true {
      next = (next + 1) & mask
      guard entries[next].slot >= 0 else { break }
      let wanted = home(of: entries[next].key)
      // `next` may fill the hole unless its home lies cyclically in (hole, next].
      let stays =
        hole <= next ? (hole < wanted && wanted <= next) : (hole < wanted || wanted <= next)
      if !stays {
        entries[hole] = entries[next]
        hole = next
      }
    }
    entries[hole].slot = -1
  }

  /// Gives the entries back (the owner's deinit).
  func free() { entries?.deallocate() }

  /// Where `key` is in `entries`, or the empty entry that ends its run.
  private func position(of key: UInt64, in entries: UnsafeMutablePointer<Entry>) -> Int {
    var index = home(of: key)
    while entries[index].slot >= 0 && entries[index].key != key { index = (index + 1) & mask }
    return index
  }

  private func home(of key: UInt64) -> Int {
    // Fibonacci hashing: session ids of one edge differ in their low bits (a serial).
    Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
  }
}
