// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Logging
import TetherCore
import TetherEdge
import TetherFleet

/// `tether-edge serve --fleet ...`: the edge joins a fleet through NATS (docs/FLEET.md).
struct FleetOptions: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "Join a fleet of edges through this NATS server with JetStream: nats://HOST:PORT or tls://HOST:PORT (several, comma-separated, tried in order). Needs --edge-id. Without it the edge is alone.",
      valueName: "url"))
  var fleet: String?

  @Option(
    help: ArgumentHelp(
      "The NATS credentials the edge connects with: a .creds file (user JWT and seed), or, with --fleet-nkey, the file holding an nkey user's seed.",
      valueName: "file"))
  var fleetCreds: String?

  @Option(
    help: ArgumentHelp(
      "The nkey user's public key (U...) whose seed --fleet-creds holds.", valueName: "key"))
  var fleetNkey: String?

  @Option(
    help: ArgumentHelp(
      "The certificate authority (PEM) the NATS server's TLS certificate is checked against, where it is not one the system trusts; implies TLS.",
      valueName: "file"))
  var fleetCA: String?

  @Flag(
    help:
      "Allow a --fleet server that is not on loopback without credentials (the fleet's state then travels unauthenticated)."
  )
  var fleetInsecure = false

  /// Whether `--fleet` was given.
  var isOn: Bool { fleet != nil }

  /// The bus's configuration for the edge `edgeID` of `appID`, its timings from the edge's
  /// own: a ping every two presence intervals and two unanswered ones make the bus lost (a
  /// frozen server is noticed within about four presence intervals, well before
  /// remote_offline_after); a write may take two presence intervals; a lost connection is
  /// tried again every presence interval, forever. Never under 10 ms (pings and waits)
  /// and 250 ms (a request: a KV write on a loaded machine).
  func busConfig(appID: AppID, edgeID: EdgeID, presenceInterval: Interval) throws
    -> NatsFleetConfig?
  {
    guard let fleet else {
      guard fleetCreds == nil, fleetNkey == nil, fleetCA == nil, !fleetInsecure else {
        throw ValidationError(
          "--fleet-creds, --fleet-nkey, --fleet-ca and --fleet-insecure need --fleet.")
      }
      return nil
    }
    let credentials: NatsFleetConfig.Credentials?
    switch (fleetCreds, fleetNkey) {
    case (let file?, nil): credentials = .credsFile(file)
    case (let file?, let key?): credentials = .nkey(publicKey: key, seedFile: file)
    case (nil, nil): credentials = nil
    case (nil, _?): throw ValidationError("--fleet-nkey needs --fleet-creds (its seed's file).")
    }
    let hex = appID.bytes.map { byte in
      let digits = String(byte, radix: 16)
      return digits.count == 1 ? "0" + digits : digits
    }.joined()
    let presence = Double(presenceInterval.nanoseconds) / 1e9
    let config = NatsFleetConfig(
      servers: fleet.split(separator: ",").map(String.init), credentials: credentials,
      tlsCAFile: fleetCA,
      name: edgeID.description, bucket: "tether-" + hex, subjectPrefix: "tether." + hex,
      pingInterval: Self.duration(2 * presence, floor: 0.01), maxPingsOut: 2,
      reconnectWait: Self.duration(presence, floor: 0.01),
      requestTimeout: Self.duration(2 * presence, floor: 0.25), insecure: fleetInsecure)
    do {
      try config.validate()
    } catch {
      throw ValidationError("\(error)")
    }
    return config
  }

  static func duration(_ seconds: Double, floor: Double) -> Duration {
    .milliseconds(Int64((max(seconds, floor) * 1000).rounded()))
  }
}

/// The bus as the loop sees it, with its losses and returns in the log (at notice: an
/// operator wants to see the fleet come and go, not each record).
final class LoggedBus: FleetBus {
  private let bus: FleetBus
  private let logger: Logger

  init(_ bus: FleetBus, logger: Logger) {
    self.bus = bus
    self.logger = logger
  }

  var descriptor: Int32 { bus.descriptor }

  func takeInputs() -> [FleetInput] {
    let inputs = bus.takeInputs()
    for input in inputs {
      switch input {
      case .up: logger.notice("fleet-up")
      case .down:
        logger.warning("fleet-down: serving this edge's own devices until the bus is back")
      case .snapshotEnd: logger.notice("fleet-state-read")
      default: break
      }
    }
    return inputs
  }

  func submit(_ commands: [FleetCommand]) { bus.submit(commands) }
}
