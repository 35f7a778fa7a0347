// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherEdge
import TetherFleet
import TetherLab

/// The bus against a server that admits one nkey user: with that nkey it comes up, without
/// it never does. The nkey is made here (libsodium's Ed25519, NATS's encoding), so the test
/// needs no NATS tool beyond the server.
@Suite(.serialized) struct NatsFleetBusAuthTests {
  @Test func anNKeyUser_connects_withItsPublicKeyAndSeedFile() throws {
    let (server, nkey) = try nkeyServer()
    let bus = try BusReader(server: server.url) { $0.credentials = nkey }
    #expect(bus.snapshot() == [])
    #expect(bus.revision("alice", .create([1])) > 0)
  }

  @Test func withoutTheNKey_theBusNeverComesUp_andSaysWhy() throws {
    let (server, _) = try nkeyServer()
    let bus = try BusReader(server: server.url)
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    let deadline = Date(timeIntervalSinceNow: 10)
    while bus.bus.lastProblem == nil && Date() < deadline { usleep(20_000) }
    let problem = bus.bus.lastProblem ?? ""
    #expect(problem.contains("Authorization Violation"), "\(problem)")
  }

  /// A started server whose only user is a fresh nkey, and that nkey as credentials.
  private func nkeyServer() throws -> (NatsServerProcess, NatsFleetConfig.Credentials) {
    let server = try NatsServerProcess()
    let user = try NKey(.user)
    let directory = server.storeDirectory
    let seedFile = directory.appendingPathComponent("edge.nk").path
    let configFile = directory.appendingPathComponent("server.conf").path
    try (user.seed + "\n").write(toFile: seedFile, atomically: true, encoding: .utf8)
    try "authorization { users = [ { nkey: \"\(user.publicKey)\" } ] }\n"
      .write(toFile: configFile, atomically: true, encoding: .utf8)
    server.extraArguments = ["-c", configFile]
    try server.start()
    return (server, .nkey(publicKey: user.publicKey, seedFile: seedFile))
  }
}
