// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// The edge server's settings. Every timing constant of the server itself is its default
/// times ``timeScale`` (never below one millisecond), so a test can run the whole timeline
/// scaled down together with clients whose thresholds are scaled alike. Token expiries,
/// bans and the admin time window are wall-clock seconds and are not scaled.
public struct EdgeConfig: Sendable {
  /// The only app id this server serves.
  public var appID: AppID
  /// The key of every token and admin MAC (the bytes of the certificate string as given).
  public let appCertificate: [UInt8]
  /// The version 2 keys of ``appCertificate`` (docs/PROTOCOL.md §12.3), made once here so
  /// that every edge built from this configuration (a restart too) has the same ones.
  public let certificateKeys: CertificateKeys
  /// What the timing constants were scaled by.
  public let timeScale: Double
  /// At most this many sessions at once, channel and login sessions together; a JOIN or
  /// LOGIN past it is refused.
  public var maxSessions: Int
  /// Every member gets a digest of the others' ages this often. 1 s × scale.
  public var presenceInterval: Interval
  /// A session silent this long is forgotten silently. 30 s × scale.
  public var forgetAfter: Interval
  /// A login session silent this long is removed, and the other members of its channels
  /// get *left* events (the online grace, docs/BEHAVIOUR.md §2). 30 s × scale.
  public var loginGrace: Interval
  /// Tokens are checked for expiry this often. 1 s × scale.
  public var tokenCheckInterval: Interval
  /// The number of the server's first login session (``LoginAccept/session``); each new
  /// session takes the next. Random by default, so a restarted server's sessions are not
  /// taken for the previous run's; tests and the simulator fix it.
  public var firstLoginSession = UInt32.random(in: .min ... .max)
  /// Keep ``EdgeEvent``s for the loop to log (``EdgeServer/takeEvents()``).
  public var recordsEvents = false
  /// JOINs taken per source address (``JoinLimit``); its refill interval is 4 ms × scale.
  public var joinLimit: JoinLimit
  /// This edge is one of a fleet (`--fleet`, docs/FLEET.md) in this incarnation: a number
  /// drawn at each start, so that its records are told from those of its previous run.
  /// Nil: the edge is alone, and sends nothing to any bus.
  public var fleetIncarnation: UInt64?

  // MARK: Protocol version 2 (docs/PROTOCOL.md §12), spoken beside version 1 until every
  // device speaks it

  /// The certificate before a rotation (§12.3; `--previous-app-certificate`): version 2
  /// tokens minted under it still open (at an INIT and in a renewal) until it is dropped.
  /// Only tokens: reset values and admin requests are the current certificate's.
  public let previousCertificate: [UInt8]?
  /// The version 2 keys of ``previousCertificate``.
  public let previousCertificateKeys: CertificateKeys?
  /// The edge's stable name in every reset value (§12.9; `--edge-id`). Unless given, the
  /// host name and port: port 0 here, which ``EdgeLoop`` replaces by the port it bound
  /// (``bound(toPort:)``).
  public var edgeID: EdgeID {
    didSet { isDefaultEdgeID = false }
  }
  /// Whether ``edgeID`` is the default (none was given).
  public private(set) var isDefaultEdgeID: Bool
  /// INITs a second that may go on to public-key work without a cookie, and the burst
  /// (§12.6; `--handshake-rate`, default 1,000). Not scaled by the time scale.
  public let handshakeRate: Int
  /// Members of one channel at most (§12.12; `--max-channel-members`, default
  /// ``maxSessions``).
  public let maxChannelMembers: Int
  /// Channel and login sessions of the app at most (§12.12; `--max-app-sessions`, default
  /// ``maxSessions``).
  public let maxAppSessions: Int
  /// How long a RESPONSE's ticket may be confirmed: 10 s × scale, never under 3 s of real
  /// time (§12.6: a device under qemu must still make its round trip).
  public let ticketLifetime: Interval

  /// - Throws: ``EdgeConfigError`` for an empty certificate, a time scale that is not a
  ///   positive finite number (or is above 1,000), a session cap below 1, a handshake
  ///   rate outside 1 … 1,000,000,000, or a libsodium that cannot start.
  public init(
    appID: AppID, appCertificate: [UInt8], timeScale: Double = 1, maxSessions: Int = 10_000,
    edgeID: EdgeID? = nil, handshakeRate: Int = HandshakeRate.defaultPerSecond,
    maxChannelMembers: Int? = nil, maxAppSessions: Int? = nil,
    previousCertificate: [UInt8]? = nil
  ) throws(EdgeConfigError) {
    guard !appCertificate.isEmpty else { throw .emptyCertificate }
    guard previousCertificate?.isEmpty != true else { throw .emptyPreviousCertificate }
    guard timeScale.isFinite, timeScale > 0, timeScale <= 1000 else { throw .invalidTimeScale }
    guard maxSessions >= 1 else { throw .invalidMaxSessions }
    guard (1...1_000_000_000).contains(handshakeRate) else { throw .invalidHandshakeRate }
    guard (maxChannelMembers ?? 1) >= 1 else { throw .invalidMaxChannelMembers }
    guard (maxAppSessions ?? 1) >= 1 else { throw .invalidMaxAppSessions }
    guard let keys = try? CertificateKeys(certificate: appCertificate) else {
      throw .sodiumUnavailable
    }
    certificateKeys = keys
    self.previousCertificate = previousCertificate
    if let previousCertificate {
      guard let previous = try? CertificateKeys(certificate: previousCertificate) else {
        throw .sodiumUnavailable
      }
      previousCertificateKeys = previous
    } else {
      previousCertificateKeys = nil
    }
    self.edgeID = edgeID ?? EdgeID.hostDefault(port: 0)
    isDefaultEdgeID = edgeID == nil
    self.handshakeRate = handshakeRate
    self.maxChannelMembers = maxChannelMembers ?? maxSessions
    self.maxAppSessions = maxAppSessions ?? maxSessions
    ticketLifetime = Self.scale(.seconds(10), by: timeScale, floor: 3_000_000_000)
    self.appID = appID
    self.appCertificate = appCertificate
    self.timeScale = timeScale
    self.maxSessions = maxSessions
    presenceInterval = Self.scale(.seconds(1), by: timeScale)
    forgetAfter = Self.scale(.seconds(30), by: timeScale)
    loginGrace = Self.scale(.seconds(30), by: timeScale)
    tokenCheckInterval = Self.scale(.seconds(1), by: timeScale)
    joinLimit = JoinLimit(refill: Self.scale(.milliseconds(4), by: timeScale, floor: 1_000))
  }

  /// This configuration for an edge whose socket is bound to `port`: the default edge id
  /// names that port (with `--listen HOST:0`, the one the system picked, not 0); a given
  /// edge id stays as it is.
  public func bound(toPort port: UInt16) -> EdgeConfig {
    guard isDefaultEdgeID else { return self }
    var config = self
    config.edgeID = EdgeID.hostDefault(port: port)
    config.isDefaultEdgeID = true
    return config
  }

  /// The certificates under 32 bytes (``CertificateKeys/strongLength``): the edge warns of
  /// each at start and never refuses one (§12.3), current first.
  public var shortCertificates: [(name: String, bytes: Int)] {
    var short: [(name: String, bytes: Int)] = []
    if !CertificateKeys.isStrong(appCertificate) {
      short.append(("app certificate", appCertificate.count))
    }
    if let previousCertificate, !CertificateKeys.isStrong(previousCertificate) {
      short.append(("previous app certificate", previousCertificate.count))
    }
    return short
  }

  /// `interval × factor`, at least `floor` nanoseconds (1 ms unless told).
  static func scale(_ interval: Interval, by factor: Double, floor: UInt64 = 1_000_000)
    -> Interval
  {
    let scaled = (Double(interval.nanoseconds) * factor).rounded()
    let nanoseconds = scaled >= Double(UInt64.max) ? UInt64.max : UInt64(scaled)
    return Interval(nanoseconds: max(nanoseconds, floor))
  }
}

/// Why an ``EdgeConfig`` was not made.
public enum EdgeConfigError: Error, Equatable, Sendable {
  case emptyCertificate
  /// A previous certificate was given, and it is empty.
  case emptyPreviousCertificate
  case invalidTimeScale
  case invalidMaxSessions
  case invalidHandshakeRate
  case invalidMaxChannelMembers
  case invalidMaxAppSessions
  /// libsodium could not start (no random source): the version 2 keys cannot be made.
  case sodiumUnavailable
}
