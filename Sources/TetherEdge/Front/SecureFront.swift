// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The edge's protocol version 2 state (docs/PROTOCOL.md §12): what answers handshakes
/// without per-session state (the certificate's keys, the token opener, cookies, the
/// handshake bucket, session ids, tickets, consumed ticket ids), and the keys of every
/// version 2 session the edge holds. What a session *is* (its channel or user, presence,
/// admission, notices) stays the server's one design, shared with version 1: the session
/// id is the key in the server's table where version 1's cookie was
/// (EdgeServer+Secure.swift wires the two together).
///
/// Generic over the crypto seam, and every random draw goes through it, so the simulation
/// can give an edge (and the edge built at its restart) the world's seeded stream.
struct SecureFront<Crypto: SessionCrypto> {
  let crypto: Crypto
  let keys: CertificateKeys
  let opener: TokenOpener<Crypto>
  let edgeID: EdgeID
  let ticketLifetime: Interval
  var cookies: CookieJar<Crypto>
  var rate: HandshakeRate
  var issuer: SessionIDIssuer<Crypto>
  var sealer: TicketSealer<Crypto>
  var consumed: ConsumedTickets
  /// By session id: every version 2 session the server holds; the ones it ended with a
  /// notice while it repeats it (forget-after: the notice is sealed afresh each time); and
  /// the one a CONFIRM is making during the current input (its refusal is sealed too).
  private(set) var sessions: [UInt64: SecureSession<Crypto.Cipher>] = [:]
  /// Sessions whose keys may no longer be needed, checked once the current input's output
  /// is written (the server decides: EdgeServer+Secure.swift).
  var retiring: [UInt64] = []

  /// Draws, in this order: the cookie secret `R` (32 bytes), the epoch (4, again while
  /// zero), `K_ticket` (32).
  init(config: EdgeConfig, crypto: Crypto) {
    self.crypto = crypto
    keys = config.certificateKeys
    opener = TokenOpener(
      crypto: crypto, current: config.certificateKeys, previous: config.previousCertificateKeys)
    edgeID = config.edgeID
    ticketLifetime = config.ticketLifetime
    cookies = CookieJar(crypto: crypto, now: .zero)
    rate = HandshakeRate(perSecond: config.handshakeRate)
    issuer = SessionIDIssuer(crypto: crypto, ticketLifetime: config.ticketLifetime)
    sealer = TicketSealer(crypto: crypto, epoch: issuer.epoch)
    consumed = ConsumedTickets(capacity: config.maxSessions)
  }

  /// Whether `kind` (a datagram's first byte) is a version 2 kind (§12.2); version 1's
  /// datagrams start with 0x54.
  static func isSecureKind(_ kind: UInt8) -> Bool { (0x01...0x08).contains(kind) }

  func holds(_ id: UInt64) -> Bool { sessions[id] != nil }

  subscript(id: UInt64) -> SecureSession<Crypto.Cipher>? { sessions[id] }

  /// The reset value of session `id` at this edge (§12.9).
  func resetValue(of id: UInt64) -> [UInt8] {
    ResetValue.of(SessionID(id), edgeID: edgeID, keys: keys, crypto: crypto)
  }

  /// Makes the keys of session `id` from its secret `S` (the caller wipes `S`), validated at
  /// `address`.
  /// - Throws: ``HandshakeError/badKey`` if the seam makes no cipher of a key.
  mutating func register(id: UInt64, sessionSecret: [UInt8], address: PeerAddress)
    throws(HandshakeError)
  {
    let keys = try SessionKeys(sessionSecret: sessionSecret, sessionID: id, crypto: crypto)
    sessions[id] = SecureSession(
      data: keys.edgeData(), resumeKey: keys.resumeKey, resetValue: resetValue(of: id),
      address: address)
  }

  /// Opens a DATA datagram of session `id` and appends its payload to `out`. Returns
  /// whether its counter is higher than every counter opened before from the device (not
  /// merely new to the window): only such a datagram may start a path validation (§12.11).
  /// - Throws: ``SealedData/Refusal``; nothing of the session changed but a count.
  mutating func open(_ datagram: ArraySlice<UInt8>, id: UInt64, into out: inout [UInt8])
    throws(SealedData<Crypto.Cipher>.Refusal) -> Bool
  {
    guard let index = sessions.index(forKey: id) else { throw .malformed }
    let before = sessions.values[index].data.window
    try sessions.values[index].data.open(datagram, into: &out)
    // The window's highest moves only for a counter above it (or the first one opened).
    return before.isEmpty || sessions.values[index].data.window.highest != before.highest
  }

  /// `payload` sealed as session `id`'s next DATA datagram; nil without keys, or once they
  /// may seal no more (a new handshake is due).
  mutating func seal(_ payload: [UInt8], id: UInt64) -> [UInt8]? {
    guard let index = sessions.index(forKey: id) else { return nil }
    var out: [UInt8] = []
    do {
      try sessions.values[index].data.seal(payload[...], into: &out)
    } catch {
      return nil
    }
    return out
  }

  /// The session is now validated at `address` (its CONFIRM's source).
  mutating func setAddress(_ address: PeerAddress, of id: UInt64) {
    sessions[id]?.address = address
  }

  // MARK: Roaming (§12.11)

  /// A datagram of session `id`, `size` bytes, opened from `address`, which is not the
  /// session's; `newest` as ``open(_:id:into:)`` said. Returns the PATH_CHALLENGE to send
  /// there (sealed, under the session's next counter) when one is due and fits the
  /// address's budget (never more bytes out than in); nil otherwise.
  mutating func heard(
    _ size: Int, of id: UInt64, from address: PeerAddress, newest: Bool
  ) -> [UInt8]? {
    guard let index = sessions.index(forKey: id) else { return nil }
    let crypto = crypto
    guard
      let challenge = sessions.values[index].path.heard(
        size, from: address, newest: newest,
        draw: {
          crypto.randomBytes(count: PathValidation.challengeBytes)
        })
    else { return nil }
    let payload = [EdgePayload.pathChallenge] + challenge
    guard sessions.values[index].path.spend(Self.sealedSize(of: payload)) else { return nil }
    return seal(payload, id: id)
  }

  /// A newest datagram of session `id` from its own address: any candidate is dropped.
  mutating func heardAtSession(_ id: UInt64, newest: Bool) {
    sessions[id]?.path.heardAtSession(newest: newest)
  }

  /// A PATH_RESPONSE of session `id` echoing `echo`, opened from `address`: the address the
  /// session moves to if it validates the outstanding candidate (the front's own record
  /// of the session's address moves with it); nil otherwise.
  mutating func validate(_ echo: ArraySlice<UInt8>, of id: UInt64, from address: PeerAddress)
    -> PeerAddress?
  {
    guard let index = sessions.index(forKey: id) else { return nil }
    let crypto = crypto
    guard
      let moved = sessions.values[index].path.validate(
        echo, from: address, equal: { crypto.constantTimeEqual($0, $1) })
    else { return nil }
    sessions.values[index].address = moved
    return moved
  }

  /// The bytes of a DATA datagram carrying `payload`: its header (17) and tag (16) around it.
  static func sealedSize(of payload: [UInt8]) -> Int {
    payload.count + SealedData<Crypto.Cipher>.headerLength + Crypto.Cipher.tagLength
  }

  /// Whether session `id`'s last ACCEPT said it was resumed (a repeated CONFIRM gets the
  /// same ACCEPT again, sealed afresh).
  mutating func setResumed(_ resumed: Bool, of id: UInt64) {
    sessions[id]?.resumed = resumed
  }

  /// Forgets session `id`'s keys, wiped where the table holds them: `k_resume`, and both
  /// data keys when the cipher is plain data (libsodium's holds its key inline; the
  /// simulation's, which holds references, is only dropped).
  mutating func forget(_ id: UInt64) {
    guard let index = sessions.index(forKey: id) else { return }
    let crypto = crypto
    crypto.wipe(&sessions.values[index].resumeKey)
    if _isPOD(SealedData<Crypto.Cipher>.self) {
      withUnsafeMutableBytes(of: &sessions.values[index].data) { crypto.wipe($0) }
    }
    sessions.remove(at: index)
  }
}

/// What the edge keeps of one version 2 session: its DATA both ways (keys, counters, replay
/// window), `k_resume` for a later resume's proof, its reset value for the ACCEPT, and
/// where it was validated (for an ended session, whose record is gone, the only address a
/// repeated notice may go to).
struct SecureSession<Cipher: DatagramCipher> {
  var data: SealedData<Cipher>
  var resumeKey: [UInt8]
  let resetValue: [UInt8]
  var address: PeerAddress
  var resumed = false
  /// An address the device may have moved to, until it answers its challenge (§12.11).
  var path = PathValidation()
}
