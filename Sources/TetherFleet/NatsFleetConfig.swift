// SPDX-License-Identifier: Apache-2.0

/// Where a ``NatsFleetBus`` connects and how fast it notices a loss. Every timing is the
/// caller's (the edge derives them from its own thresholds and `--time-scale`): the bus
/// never falls back on libnats's defaults, whose seconds-long pings and minutes of
/// reconnect budget would outlive an edge's own deadlines.
public struct NatsFleetConfig: Sendable, Equatable {
  /// How the connection proves who it is: a NATS `.creds` file (a user JWT and its nkey
  /// seed), or an nkey: its public key (`U…`, as the server's config names the user) and
  /// the file holding its seed. libnats needs both (it derives no public key from a seed,
  /// and an empty one would silently mean no nkey at all).
  public enum Credentials: Sendable, Equatable {
    case credsFile(String)
    case nkey(publicKey: String, seedFile: String)
  }

  /// `nats://host:port` or `tls://host:port` (TLS for the whole connection when any is
  /// `tls://`); tried in order, never shuffled.
  public var servers: [String]
  public var credentials: Credentials?
  /// A PEM file of the certificate authorities that sign the servers' TLS certificates,
  /// beside the system's (a fleet's own CA); setting it makes the connection TLS.
  public var tlsCAFile: String?
  /// The connection's name as the server shows it: the edge's id.
  public var name: String
  /// The fleet's key-value bucket (`A-Z a-z 0-9 _ -`).
  public var bucket: String
  /// The bus subscribes to `prefix.>`; a publish of `subject` goes to `prefix.subject`.
  public var subjectPrefix: String
  /// A PING every `pingInterval`; `maxPingsOut` unanswered ones and the connection is
  /// declared lost (so a frozen server is noticed within about their product).
  public var pingInterval: Duration
  public var maxPingsOut: Int
  /// The pause between reconnection attempts (forever: the bus never gives up).
  public var reconnectWait: Duration
  /// How long a connection attempt, a JetStream or key-value request, or a socket write
  /// may take before it counts as failed.
  public var requestTimeout: Duration
  /// Allows a server that is not on loopback without credentials (tests, a trusted LAN).
  public var insecure: Bool

  public init(
    servers: [String], credentials: Credentials? = nil, tlsCAFile: String? = nil, name: String,
    bucket: String,
    subjectPrefix: String, pingInterval: Duration, maxPingsOut: Int, reconnectWait: Duration,
    requestTimeout: Duration, insecure: Bool = false
  ) {
    self.servers = servers
    self.credentials = credentials
    self.tlsCAFile = tlsCAFile
    self.name = name
    self.bucket = bucket
    self.subjectPrefix = subjectPrefix
    self.pingInterval = pingInterval
    self.maxPingsOut = maxPingsOut
    self.reconnectWait = reconnectWait
    self.requestTimeout = requestTimeout
    self.insecure = insecure
  }

  /// Refuses a configuration the bus could not honour, or one that would send the fleet's
  /// state in clear to another host without proving who sends it.
  public func validate() throws(FleetConfigError) {
    guard !servers.isEmpty else { throw .noServer }
    for url in servers {
      let server = try NatsServerURL(parsing: url)
      if !server.isLoopback && credentials == nil && !server.hasUserInfo && !insecure {
        throw .remoteWithoutCredentials(url)
      }
    }
    guard Self.isBucketName(bucket) else { throw .badBucket(bucket) }
    guard Self.isSubjectPrefix(subjectPrefix) else { throw .badSubjectPrefix(subjectPrefix) }
    guard !name.isEmpty else { throw .badName }
    switch credentials {
    case .credsFile(let path) where path.isEmpty: throw .badCredentials("the .creds file is empty")
    case .nkey(let key, _) where !key.hasPrefix("U") || key.count < 2:
      throw .badCredentials("an nkey user's public key starts with U")
    case .nkey(_, let path) where path.isEmpty: throw .badCredentials("the seed file is empty")
    default: break
    }
    for (label, value) in [
      ("ping interval", pingInterval), ("reconnect wait", reconnectWait),
      ("request timeout", requestTimeout),
    ] where value.milliseconds < 1 {
      throw .badTiming("the \(label) must be at least 1 ms")
    }
    guard maxPingsOut >= 1 else { throw .badTiming("at least 1 ping may be out") }
  }

  /// True when one of the servers is `tls://`, or a CA file is given: the connection is
  /// then TLS throughout.
  var isSecure: Bool { tlsCAFile != nil || servers.contains { $0.hasPrefix("tls://") } }

  static func isBucketName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.allSatisfy { isWordByte($0) }
  }

  /// Dot-separated tokens of `A-Z a-z 0-9 _ -`: no wildcard, no empty token.
  static func isSubjectPrefix(_ prefix: String) -> Bool {
    let tokens = prefix.split(separator: ".", omittingEmptySubsequences: false)
    return !prefix.isEmpty && tokens.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy(isWordByte) }
  }

  private static func isWordByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
      true
    default: false
    }
  }
}

/// Why a ``NatsFleetConfig`` was refused.
public enum FleetConfigError: Error, Equatable, CustomStringConvertible {
  case noServer
  case badURL(String, reason: String)
  case remoteWithoutCredentials(String)
  case badBucket(String)
  case badSubjectPrefix(String)
  case badName
  case badCredentials(String)
  case badTiming(String)

  public var description: String {
    switch self {
    case .noServer: "fleet: no NATS server given"
    case .badURL(let url, let reason): "fleet: bad NATS server URL '\(url)': \(reason)"
    case .remoteWithoutCredentials(let url):
      "fleet: '\(url)' is not on loopback and no credentials are given: give a .creds or nkey "
        + "seed file, or allow it explicitly as insecure"
    case .badBucket(let name):
      "fleet: bad bucket name '\(name)': use only A-Z, a-z, 0-9, _ and -"
    case .badSubjectPrefix(let prefix):
      "fleet: bad subject prefix '\(prefix)': dot-separated tokens of A-Z, a-z, 0-9, _ and -"
    case .badName: "fleet: the connection name (the edge's id) is empty"
    case .badCredentials(let what): "fleet: bad credentials: \(what)"
    case .badTiming(let what): "fleet: bad timing: \(what)"
    }
  }
}

/// A server URL as the validation reads it: its scheme and host.
struct NatsServerURL: Equatable {
  var host: String
  /// `user:password@` or `token@` before the host: credentials of the URL's own.
  var hasUserInfo: Bool

  init(parsing url: String) throws(FleetConfigError) {
    var rest = Substring(url)
    if let range = Self.find("://", in: rest) {
      let scheme = rest[..<range.lowerBound]
      guard scheme == "nats" || scheme == "tls" else {
        throw .badURL(url, reason: "the scheme must be nats:// or tls://")
      }
      rest = rest[range.upperBound...]
    }
    if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
    hasUserInfo = rest.contains("@")
    if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else {
        throw .badURL(url, reason: "an IPv6 address without its closing ]")
      }
      host = String(rest[rest.index(after: rest.startIndex)..<close])
    } else {
      host = String(rest.split(separator: ":", omittingEmptySubsequences: false)[0])
    }
    guard !host.isEmpty else { throw .badURL(url, reason: "no host") }
  }

  /// Where `needle` first starts in `text` (the standard library has no substring search).
  static func find(_ needle: String, in text: Substring) -> Range<Substring.Index>? {
    var index = text.startIndex
    while index != text.endIndex {
      if text[index...].hasPrefix(needle) {
        return index..<text.index(index, offsetBy: needle.count)
      }
      index = text.index(after: index)
    }
    return nil
  }

  /// 127.0.0.0/8, ::1 or localhost: the connection never leaves the machine.
  var isLoopback: Bool {
    if host.lowercased() == "localhost" || host == "::1" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { return false }
    return parts[0] == "127"
  }
}

extension Duration {
  /// Whole milliseconds, as libnats counts its timings (rounded down, saturating).
  var milliseconds: Int64 {
    let (seconds, attoseconds) = components
    let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    return overflow ? Int64.max : ms &+ attoseconds / 1_000_000_000_000_000
  }

  /// In seconds, for a deadline.
  var seconds: Double { Double(milliseconds) / 1000 }
}
