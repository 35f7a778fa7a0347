// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Glibc
import Logging
import TetherCore
import TetherEdge
import TetherFleet

/// `tether-edge serve`: runs the server until SIGINT or SIGTERM.
struct Serve: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Serve Tether clients on a UDP address.",
    discussion: """
      The first line on stdout is `listening on HOST:PORT`, with the real port when the
      port given is 0. The log goes to stderr, one line per record: an ISO-8601 UTC time,
      the level, the message and key=value fields; every session event (join, resume,
      leave, kick, login, relogin, logout, login-join, login-leave, kick-user) is one line
      at info. Protocol version 1 is not spoken: its datagrams get nothing back, and at most
      every 10 s a `v1-dropped` line at warning says how many came since the last one, and
      why. SIGINT and SIGTERM stop the server cleanly: it stops reading, closes its socket,
      logs `stopped` and exits with status 0.
      """)

  @Option(help: "Where to listen: A.B.C.D:PORT or [IPv6]:PORT, numeric only; port 0 picks one.")
  var listen: String

  @OptionGroup var app: AppOptions

  @OptionGroup(title: "Fleet") var fleet: FleetOptions

  @Option(help: "Multiplies every timing constant of the server (presence, forget, token checks).")
  var timeScale: Double = 1

  @Option(
    help: "At most this many sessions at once, channel and login ones together; more are refused.")
  var maxSessions: Int = 10_000

  @Option(help: "JOINs one source address may send at once (its join limit's burst).")
  var joinBurst: Int = 1024

  @Option(help: "JOINs per second one source address may send after its burst (at time scale 1).")
  var joinRate: Double = 250

  @Option(help: "At most this many source addresses are tracked by the join limit.")
  var joinSources: Int = 4096

  @Option(
    help: ArgumentHelp(
      "This edge's stable name in reset values: the same across its restarts, different for each edge of a fleet (default: the host name, ':' and the port the edge listens on; with --listen port 0 that port changes at each start, so give --edge-id there).",
      valueName: "id"))
  var edgeID: String?

  @Option(
    help: ArgumentHelp(
      "The app certificate before a rotation: v2 tokens minted under it still join and renew until it is dropped (keep it while such tokens may be unexpired). Under 32 bytes it gets a warning at start, as --app-certificate does.",
      valueName: "certificate"))
  var previousAppCertificate: String?

  @Option(
    help: ArgumentHelp(
      "Handshakes a second (and the burst) that get public-key work without a cookie; past it the edge is under load and answers with cookies. Not scaled by --time-scale.",
      valueName: "n"))
  var handshakeRate: Int = HandshakeRate.defaultPerSecond

  @Option(
    help: ArgumentHelp(
      "Members of one channel at most; more are refused (default: --max-sessions).",
      valueName: "n"))
  var maxChannelMembers: Int?

  @Option(
    help: ArgumentHelp(
      "Channel and login sessions of the app at most; more are refused (default: --max-sessions).",
      valueName: "n"))
  var maxAppSessions: Int?

  @Option(
    help: ArgumentHelp(
      "The least level logged to stderr: trace, debug, info (one line per session event), notice, warning, error or critical.",
      valueName: "level"))
  var logLevel: LogLevelOption = .info

  @Flag(
    help:
      "On stop, print the server's counters (a `counters` line, and a `v2` line of protocol v2's) and table sizes (a `tables` line) on stdout."
  )
  var printCounters = false

  @Flag(help: "Check the options, print `configuration ok` and exit without serving.")
  var checkConfig = false

  func validate() throws {
    _ = try address()
    let config = try config()
    guard !fleet.isOn || edgeID != nil else {
      throw ValidationError(
        "--fleet needs --edge-id: each edge of a fleet names itself, the same across its restarts.")
    }
    _ = try fleet.busConfig(
      appID: config.appID, edgeID: config.edgeID, presenceInterval: config.presenceInterval)
  }

  func run() throws {
    if checkConfig {
      print("configuration ok")  // validate() has checked every option
      return
    }
    let logger = Logger(label: "tether-edge") { _ in EdgeLogHandler(level: logLevel.level) }
    let stop: StopSignal
    do {
      stop = try StopSignal()
    } catch {
      throw fail("\(error)")
    }
    // The loop, and with it the socket (UnconnectedUDPSocket closes it), is gone when serve
    // returns.
    let summary = try serve(stop: stop, logger: logger)
    logger.notice(
      "stopped",
      metadata: [
        "signal": "\(Self.signalName(stop.receivedSignal))",
        "sessions": "\(summary.tables.sessions)", "logins": "\(summary.tables.logins)",
      ])
    if printCounters {
      for line in summary.lines { print(line) }
      fflush(nil)
    }
  }

  /// Binds, serves until `stop`, and returns the server's last counters.
  private func serve(stop: StopSignal, logger: Logger) throws -> EdgeSummary {
    let loop: EdgeLoop
    do {
      loop = try EdgeLoop(config: try config(), listen: try address(), stop: stop)
    } catch let error as SystemError {
      throw fail("cannot listen on \(listen): \(error)")
    }
    stop.installSignalHandlers()
    // Session events log at info, version 1 drops at warning (the logger keeps its level).
    if logLevel.level <= .warning {
      loop.onEvent = { event in logger.log(event) }
    }
    print("listening on \(loop.localAddress)")
    fflush(nil)  // stdout: the first line must reach a pipe at once
    logger.notice(
      "listening",
      metadata: ["address": "\(loop.localAddress)", "max_sessions": "\(maxSessions)"])
    for (name, bytes) in loop.server.config.shortCertificates {
      // Never a refusal: people type short ones, and the edge cannot tell random bytes from
      // a word (docs/SECURITY.md says what a guessable one costs).
      logger.warning(
        "the \(name) is short: it may be guessed; `tether-edge certificate` prints a strong one",
        metadata: ["bytes": "\(bytes)", "strong_from": "\(CertificateKeys.strongLength)"])
    }
    let bus = try joinFleet(loop, logger: logger)
    defer { bus?.stop() }
    do {
      try loop.run()
    } catch {
      logger.error("stopped", metadata: ["error": "\(error)"])
      throw fail("\(error)")
    }
    if let counters = loop.server.fleetCounters, printCounters {
      print(
        "fleet writes=\(counters.writes) conflicts=\(counters.conflicts) failed=\(counters.failed) "
          + "lost=\(counters.lost) reaped=\(counters.reaped) malformed=\(counters.malformed) "
          + "foreign_keys=\(counters.foreignKeys) namesakes=\(counters.namesakes) "
          + "dropped_messages=\(bus?.droppedPublishes ?? 0) "
          + "longest_input_us=\(loop.longestBusBatchNanoseconds / 1000)")
    }
    return EdgeSummary(
      counters: loop.server.counters, tables: loop.server.tableCounts,
      sendFailures: loop.sendFailures, receiveDrops: loop.receiveDrops)
  }

  /// With `--fleet`, starts the bus (it connects in the background: the edge serves its own
  /// devices whether or not the bus answers) and hands it to `loop`.
  private func joinFleet(_ loop: EdgeLoop, logger: Logger) throws -> NatsFleetBus? {
    let config = loop.server.config
    guard
      let busConfig = try fleet.busConfig(
        appID: config.appID, edgeID: config.edgeID, presenceInterval: config.presenceInterval)
    else { return nil }
    do {
      let bus = try NatsFleetBus(config: busConfig)
      loop.bus = LoggedBus(bus, logger: logger)
      logger.notice(
        "fleet",
        metadata: [
          "servers": "\(busConfig.servers.joined(separator: ","))", "bucket": "\(busConfig.bucket)",
          "edge_id": "\(config.edgeID)",
          "incarnation": "\(config.fleetIncarnation.map { String($0, radix: 16) } ?? "-")",
        ])
      return bus
    } catch {
      throw fail("\(error)")
    }
  }

  /// `SIGTERM`, `SIGINT`, or `none` when the stop came from elsewhere.
  static func signalName(_ number: Int32?) -> String {
    switch number {
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case let other?: "\(other)"
    case nil: "none"
    }
  }

  private func address() throws -> SocketAddress {
    do {
      return try SocketAddress(parsing: listen)
    } catch {
      throw ValidationError(
        "--listen must be A.B.C.D:PORT or [IPv6]:PORT with a numeric host and a port 0-65535 (got '\(listen)')."
      )
    }
  }

  /// `--edge-id`; nil without one: the default (this host's name and the port the socket
  /// is bound to, which `--listen HOST:0` leaves to the system) is made once it is bound.
  private func edge() throws -> EdgeID? {
    guard let edgeID else { return nil }
    guard let id = EdgeID(edgeID) else {
      throw ValidationError("--edge-id must be 1 to 255 bytes of printable ASCII without space.")
    }
    return id
  }

  private func config() throws -> EdgeConfig {
    do {
      var config = try EdgeConfig(
        appID: try app.appID, appCertificate: app.certificate, timeScale: timeScale,
        maxSessions: maxSessions, edgeID: try edge(), handshakeRate: handshakeRate,
        maxChannelMembers: maxChannelMembers, maxAppSessions: maxAppSessions,
        previousCertificate: previousAppCertificate.map { Array($0.utf8) })
      config.recordsEvents = logLevel.level <= .warning
      if fleet.isOn { config.fleetIncarnation = UInt64.random(in: 1 ... .max) }
      guard joinBurst >= 1 else { throw ValidationError("--join-burst must be at least 1.") }
      guard joinRate.isFinite, joinRate >= 0.001 else {
        throw ValidationError("--join-rate must be at least 0.001.")
      }
      guard joinSources >= 1 else { throw ValidationError("--join-sources must be at least 1.") }
      let refill = Interval(nanoseconds: UInt64(min(1e18, 1e9 / joinRate * timeScale)))
      config.joinLimit = JoinLimit(burst: joinBurst, refill: refill, maxSources: joinSources)
      return config
    } catch let error as EdgeConfigError {
      switch error {
      case .emptyCertificate: throw ValidationError("--app-certificate must not be empty.")
      case .emptyPreviousCertificate:
        throw ValidationError("--previous-app-certificate must not be empty.")
      case .invalidTimeScale:
        throw ValidationError("--time-scale must be above 0 and at most 1000.")
      case .invalidMaxSessions: throw ValidationError("--max-sessions must be at least 1.")
      case .invalidHandshakeRate:
        throw ValidationError("--handshake-rate must be 1 to 1000000000.")
      case .invalidMaxChannelMembers:
        throw ValidationError("--max-channel-members must be at least 1.")
      case .invalidMaxAppSessions: throw ValidationError("--max-app-sessions must be at least 1.")
      case .sodiumUnavailable: throw ValidationError("libsodium cannot start (no random source).")
      }
    }
  }
}

/// `--log-level`: swift-log's levels by their names.
enum LogLevelOption: String, CaseIterable, ExpressibleByArgument {
  case trace, debug, info, notice, warning, error, critical

  var level: Logger.Level {
    switch self {
    case .trace: .trace
    case .debug: .debug
    case .info: .info
    case .notice: .notice
    case .warning: .warning
    case .error: .error
    case .critical: .critical
    }
  }
}
