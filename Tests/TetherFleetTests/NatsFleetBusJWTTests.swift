// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherEdge
import TetherFleet
import TetherLab

/// The bus with a `.creds` file against a server in operator mode (decentralized JWT
/// auth): the server trusts an operator, knows its accounts from JWTs preloaded in its
/// config, and admits a user whose JWT one of them signed and who proves to hold its seed.
/// The JWTs are made here (``NatsJWT``), so the test needs no `nsc`.
@Suite(.serialized) struct NatsFleetBusJWTTests {
  @Test func aCredsFile_connects_toAServerInOperatorMode_andMakesItsBucket() throws {
    let (server, trust) = try operatorServer()
    let creds = try fleetUserCreds(server, trust)
    let bus = try BusReader(server: server.url) { $0.credentials = .credsFile(creds) }
    #expect(bus.snapshot() == [])
    #expect(bus.revision("alice", .create([1])) > 0)
  }

  /// Creds the server must refuse.
  enum Refused: CaseIterable, CustomTestStringConvertible {
    /// A user whose account the server does not know (no JWT of it preloaded).
    case aUserOfAnUnknownAccount
    /// A trusted user's JWT beside another key's seed (the nonce's signature fails).
    case aSeedNotTheJWTs

    var testDescription: String {
      switch self {
      case .aUserOfAnUnknownAccount: "a user of an unknown account"
      case .aSeedNotTheJWTs: "a seed that is not the JWT's"
      }
    }
  }

  /// The server's own reason is the bus's problem: the bus makes each first attempt itself
  /// (libnats 3.4.1's retry on a failed first connect loses the reason, and closes the
  /// connection for good after a refusal).
  @Test(arguments: Refused.allCases)
  func withCredsTheServerRefuses_theBusNeverComesUp_andHasAProblem(_ refused: Refused) throws {
    let (server, trust) = try operatorServer()
    let (jwt, seed) = try refusedCreds(refused, trust)
    let creds = try writeCreds(jwt, seed: seed, in: server)
    let bus = try BusReader(server: server.url) { $0.credentials = .credsFile(creds) }
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    let deadline = Date(timeIntervalSinceNow: 10)
    while bus.bus.lastProblem == nil && Date() < deadline { usleep(20_000) }
    let problem = bus.bus.lastProblem ?? ""
    #expect(problem.hasPrefix("fleet: connecting failed"), "\(problem)")
    #expect(problem.contains("Authorization Violation"), "\(problem)")
  }

  /// The bus never gives up on its servers (it tries again every reconnect wait, for
  /// ever): a server that refused it and later admits it should see it come up.
  @Test func aRefusedBus_comesUp_onceTheServerKnowsItsAccount() throws {
    let (server, trust) = try operatorServer(knowingTheFleet: false)
    let creds = try fleetUserCreds(server, trust)
    let bus = try BusReader(server: server.url) { $0.credentials = .credsFile(creds) }
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    server.kill()
    try configure(server, trust, knowingTheFleet: true)
    try server.start()
    #expect(bus.next(within: 5) { $0 == .up } != nil)
    let fresh = try BusReader(server: server.url) { $0.credentials = .credsFile(creds) }
    #expect(fresh.snapshot() == [], "the restarted server admits the same creds")
  }

  /// The same after a loss: libnats gives up a server that refused it twice in a row
  /// (nats.c 3.13 added `natsOptions_SetIgnoreAuthErrorAbort` to opt out) and closes the
  /// connection; the bus then makes a new one, so a server restarted without the fleet's
  /// account for a moment does not lose the bus for good.
  @Test func aBusRefusedAfterALoss_comesUpAgain_onceTheServerKnowsItsAccount() throws {
    let (server, trust) = try operatorServer()
    let creds = try fleetUserCreds(server, trust)
    let bus = try BusReader(server: server.url) { $0.credentials = .credsFile(creds) }
    #expect(bus.snapshot() == [])
    server.kill()
    #expect(bus.expect(.down))
    try configure(server, trust, knowingTheFleet: false)
    try server.start()
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    server.kill()
    try configure(server, trust, knowingTheFleet: true)
    try server.start()
    #expect(bus.next(within: 5) { $0 == .up } != nil)
  }

  private func refusedCreds(_ refused: Refused, _ trust: OperatorTrust) throws -> (String, String) {
    let user = try NKey(.user)
    switch refused {
    case .aUserOfAnUnknownAccount:
      let stranger = try NKey(.account)
      return (NatsJWT.user(user, name: "stranger", account: stranger), user.seed)
    case .aSeedNotTheJWTs:
      return (NatsJWT.user(user, name: "edge", account: trust.fleet), try NKey(.user).seed)
    }
  }

  /// A started server in operator mode, and what it trusts.
  private func operatorServer(knowingTheFleet: Bool = true) throws
    -> (NatsServerProcess, OperatorTrust)
  {
    let server = try NatsServerProcess()
    let trust = try OperatorTrust()
    try configure(server, trust, knowingTheFleet: knowingTheFleet)
    try server.start()
    return (server, trust)
  }

  /// Writes the server's configuration for its next start.
  private func configure(_ server: NatsServerProcess, _ trust: OperatorTrust, knowingTheFleet: Bool)
    throws
  {
    let configFile = server.storeDirectory.appendingPathComponent("server.conf").path
    try trust.serverConfig(knowingTheFleet: knowingTheFleet)
      .write(toFile: configFile, atomically: true, encoding: .utf8)
    server.extraArguments = ["-c", configFile]
  }

  /// A new user of the fleet's account, its `.creds` file written; returns its path.
  private func fleetUserCreds(_ server: NatsServerProcess, _ trust: OperatorTrust) throws
    -> String
  {
    let user = try NKey(.user)
    return try writeCreds(
      NatsJWT.user(user, name: "edge", account: trust.fleet), seed: user.seed, in: server)
  }

  /// Writes a `.creds` file into the server's directory; returns its path.
  private func writeCreds(_ jwt: String, seed: String, in server: NatsServerProcess) throws
    -> String
  {
    let path = server.storeDirectory.appendingPathComponent("edge.creds").path
    try NatsJWT.creds(jwt: jwt, seed: seed).write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }
}

/// An operator, its system account, and the fleet's account (JetStream on): the keys and
/// the server configuration that trusts them.
private struct OperatorTrust {
  let operatorKey: NKey
  let system: NKey
  let fleet: NKey

  init() throws {
    operatorKey = try NKey(.operator)
    system = try NKey(.account)
    fleet = try NKey(.account)
  }

  /// The operator's JWT inline, its accounts preloaded in a memory resolver (no account
  /// server; the fleet's left out unless `knowingTheFleet`), JetStream on. Its store is the one ``NatsServerProcess`` gives with `-sd`, in
  /// the server's own directory: nats-server 2.9 refuses a `store_dir` in the file beside
  /// it ("Duplicate 'store_dir' configuration").
  func serverConfig(knowingTheFleet: Bool) -> String {
    let operatorJWT = NatsJWT.operator(operatorKey, name: "tether", systemAccount: system.publicKey)
    let systemJWT = NatsJWT.account(system, name: "SYS", issuer: operatorKey, jetStream: false)
    let fleetJWT = NatsJWT.account(fleet, name: "fleet", issuer: operatorKey, jetStream: true)
    let fleetLine = knowingTheFleet ? "\(fleet.publicKey): \"\(fleetJWT)\"" : ""
    return """
      operator: "\(operatorJWT)"
      system_account: "\(system.publicKey)"
      resolver: MEMORY
      resolver_preload: {
        \(system.publicKey): "\(systemJWT)"
        \(fleetLine)
      }
      jetstream: enabled

      """
  }
}
