// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherEdge
import TetherFleet
import TetherLab

/// The bus over TLS, to a server whose certificate a CA of the fleet's own signs (a
/// self-signed one here, made with openssl for the test).
@Suite(.serialized) struct NatsFleetBusTLSTests {
  @Test func tls_withTheFleetsCA_connectsAndWrites() throws {
    let (server, certificate) = try tlsServer()
    let bus = try BusReader(server: "tls://localhost:\(server.port)") {
      $0.tlsCAFile = certificate
    }
    #expect(bus.snapshot() == [])
    #expect(bus.revision("alice", .create([1])) > 0)
  }

  @Test func tls_withoutTheCA_neverComesUp_andSaysWhy() throws {
    let (server, _) = try tlsServer()
    let bus = try BusReader(server: "tls://localhost:\(server.port)")
    #expect(bus.next(within: 1) { $0 == .up } == nil)
    let deadline = Date(timeIntervalSinceNow: 10)
    while bus.bus.lastProblem == nil && Date() < deadline { usleep(20_000) }
    let problem = bus.bus.lastProblem ?? ""
    #expect(problem.hasPrefix("fleet: connecting failed"), "\(problem)")
    #expect(problem.contains("SSL") || problem.contains("certificate"), "\(problem)")
  }

  /// A started server with `--tls`, and the path of its self-signed certificate.
  private func tlsServer() throws -> (NatsServerProcess, String) {
    let server = try NatsServerProcess()
    let key = server.storeDirectory.appendingPathComponent("key.pem").path
    let certificate = server.storeDirectory.appendingPathComponent("cert.pem").path
    let openssl = Process()
    openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    openssl.arguments = [
      "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
      certificate, "-days", "2", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ]
    openssl.standardOutput = FileHandle.nullDevice
    openssl.standardError = FileHandle.nullDevice
    try openssl.run()
    openssl.waitUntilExit()
    guard openssl.terminationStatus == 0 else {
      throw LabError("openssl could not make the test's certificate")
    }
    server.extraArguments = ["--tls", "--tlscert", certificate, "--tlskey", key]
    try server.start()
    return (server, certificate)
  }
}
