// SPDX-License-Identifier: Apache-2.0
/// Protocol version 2 on the device (docs/PROTOCOL.md §12), one layer for both profiles:
/// it sits between a session (``ChannelSession``, ``LoginSession``), which keeps speaking
/// version 1's `Packet(cookie, message)`, and the socket. The sessions' state logic does
/// not change, so docs/STATES.md holds for version 2 as it is.
///
/// The driver calls two functions:
/// - ``secure(_:from:session:now:)`` after every entry point of the session: each version 1
///   datagram the session wrote into its output is replaced there with what version 2
///   sends (a JOIN or LOGIN into a handshake attempt, anything else into sealed DATA), so
///   the driver sends what it finds in the output, as before;
/// - ``receive(_:session:now:into:)`` with every datagram instead of the session's own
///   `receive(datagram:)`: handshake answers, DATA, RESET; what opens is handed to the
///   session as the version 1 packet it stands for, with the session's own cookie.
///   Nothing unauthenticated reaches the session; what does not open is counted.
///
/// The session's cookie stays local (never on the wire): the layer binds its keys to it,
/// forgets them when the session ends (its cookie is 0) or a new one starts (a JOIN of
/// another cookie), and the edge's session id takes the cookie's place on the wire.
public struct SecureLink<Crypto: SessionCrypto> {
  public let crypto: Crypto
  let limits: KeyLimits
  var handshake: DeviceHandshake<Crypto>
  /// The session cookie the keys belong to; 0: none.
  var boundCookie: UInt64 = 0
  /// The last JOIN's or LOGIN's request `Q` (its first 168 bytes), when ``hasRequest``: what
  /// a resumed handshake (a rekey) asks again. Every value the layer keeps has a fixed
  /// size and is held inline (``InlineBytes``, ``KeyBytes``, words): no array, no optional
  /// of a value holding one (`make v2-size`, docs/PROTOCOL.md §12.16), but the session's
  /// own token text, held as ``parsedText``, and the ``payload`` room.
  var request = InlineBytes()
  var hasRequest = false
  /// The token of the last JOIN or LOGIN, or the one a TOKEN_RENEWED confirmed, when
  /// ``hasToken``.
  var token = TokenV2()
  var hasToken = false
  /// The text ``token`` was parsed from (the session's own array, held, not copied): a
  /// JOIN or LOGIN carrying the same text again (every retry, every rejoin) reuses the
  /// parse instead of decoding it anew (base64 and wipes at each attempt: about 3 % of the
  /// device's CPU in the churn window of `make bench`, issue 26). Emptied whenever
  /// ``token`` is not that text's parse, and when the session ends.
  var parsedText: [UInt8] = []
  /// The token of the RENEW_TOKEN out, when ``hasRenewal``: current once TOKEN_RENEWED says
  /// so.
  var renewal = TokenV2()
  var hasRenewal = false
  /// The keys an ACCEPT confirmed: what DATA goes under. nil before the first ACCEPT.
  var data: SealedData<Crypto.Cipher>?
  /// Whether ``data`` holds keys, set wherever it is: `data != nil` copies the keys to the
  /// stack to test them (`make v2-size`, docs/PROTOCOL.md §12.16).
  var confirmed = false
  /// `k_resume` and the reset value of ``data``'s session (meaningful with ``data``).
  var resumeKey = KeyBytes()
  var resetValue: (UInt64, UInt64) = (0, 0)
  /// A RESPONSE taken, its ACCEPT not yet: the new keys and the CONFIRM to repeat.
  var held: HeldResponse?
  /// A cookie from a COOKIE_REPLY, for `mac2` until `cookieUntil`.
  var cookie: (UInt64, UInt64) = (0, 0)
  var cookieUntil: Instant = .zero
  /// Whether the handshake in flight answers the session's JOIN or LOGIN (its ACCEPT or
  /// refusal goes to the session); false for a rekey the layer started itself.
  var sessionAsked = false
  /// Set while an opened payload is decoded when the layer took it for itself (a
  /// PATH_CHALLENGE answered, a rekey's ACCEPT): not counted as dropped.
  var layerTook = false
  /// A rekey attempt goes out no sooner than this.
  var rekeyNotBefore: Instant = .zero
  /// The device's wall clock, unix seconds, as the driver last set it; 0: unknown. Before
  /// the first ACCEPT a token whose public expiry it has passed is refused here (§12.4).
  public var unixTime: UInt64 = 0

  /// DATA datagrams whose tag did not verify.
  public internal(set) var unopened: UInt64 = 0
  /// DATA datagrams dropped unopened: a repeated or too old counter, or past the limits.
  public internal(set) var replayed: UInt64 = 0
  /// Anything else dropped: another kind, size or session id, a handshake answer for no
  /// attempt or that does not open, a payload that does not decode, a RESET not this
  /// session's.
  public internal(set) var dropped: UInt64 = 0

  /// The payload being opened. Kept, so that a steady session allocates nothing: room for
  /// an ack or a small channel's presence digest at first; a larger digest grows it once.
  /// (Room for the largest datagram, 1,200 bytes, was 1.2 KB of heap per engine.)
  var payload: [UInt8] = []

  /// How long a cookie is kept (§12.6).
  static var cookieLifetime: Interval { .seconds(120) }

  @inline(never)  // one copy for every link the driver makes
  public init(crypto: Crypto, limits: KeyLimits = .standard) {
    self.crypto = crypto
    self.limits = limits
    handshake = DeviceHandshake(crypto: crypto)
    payload.reserveCapacity(128)
  }

  /// A RESPONSE the device took: the keys it made, and the CONFIRM (its first 201 bytes),
  /// sent again (the same bytes) at each retry until the ticket lifetime has passed.
  struct HeldResponse {
    var data: SealedData<Crypto.Cipher>
    /// `k_resume` of the new session: wiped in place when dropped.
    var resumeKey: KeyBytes
    var confirm: InlineBytes
    let until: Instant
  }

  /// The session id on the wire: the confirmed session's; 0 before the first ACCEPT.
  public var sessionID: UInt64 { data?.sessionID ?? 0 }

  /// Forgets every key, attempt and token (the session ended, or another began).
  @inline(never)
  mutating func forget() {
    handshake.end()
    let crypto = crypto
    resumeKey.withUnsafeMutableBytes { crypto.wipe($0) }
    dropData()
    confirmed = false
    dropHeld()
    hasRequest = false
    hasToken = false
    parsedText = []
    hasRenewal = false
    sessionAsked = false
  }

  /// Drops the held RESPONSE, wiped where it is held: all of it (its data keys too) when it
  /// is plain data, as with libsodium's cipher (two keys inline); else its `k_resume`.
  @inline(never)
  mutating func dropHeld() {
    let crypto = crypto
    if _isPOD(HeldResponse?.self) {
      Swift.withUnsafeMutableBytes(of: &held) { crypto.wipe($0) }
    } else {
      held?.resumeKey.withUnsafeMutableBytes { crypto.wipe($0) }
    }
    held = nil
  }

  /// Drops the session's data keys, wiped where they are held when they are plain data (a
  /// cipher holding references, as the simulation's, is only dropped).
  @inline(never)
  mutating func dropData() {
    let crypto = crypto
    if _isPOD(SealedData<Crypto.Cipher>?.self) {
      Swift.withUnsafeMutableBytes(of: &data) { crypto.wipe($0) }
    }
    data = nil
  }
}
