// SPDX-License-Identifier: Apache-2.0
import CSodium
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
    #expect(bus.bus.lastProblem != nil)
  }

  /// A started server whose only user is a fresh nkey, and that nkey as credentials.
  private func nkeyServer() throws -> (NatsServerProcess, NatsFleetConfig.Credentials) {
    let server = try NatsServerProcess()
    let (publicKey, seed) = try NKey.user()
    let directory = server.storeDirectory
    let seedFile = directory.appendingPathComponent("edge.nk").path
    let configFile = directory.appendingPathComponent("server.conf").path
    try (seed + "\n").write(toFile: seedFile, atomically: true, encoding: .utf8)
    try "authorization { users = [ { nkey: \"\(publicKey)\" } ] }\n"
      .write(toFile: configFile, atomically: true, encoding: .utf8)
    server.extraArguments = ["-c", configFile]
    try server.start()
    return (server, .nkey(publicKey: publicKey, seedFile: seedFile))
  }
}

/// NATS's nkey text: base32 (no padding) of a prefix, the key, and a CRC-16 (XMODEM,
/// little-endian) of both.
enum NKey {
  static let userPrefix: UInt8 = 20 << 3
  static let seedPrefix: UInt8 = 18 << 3

  /// A new user's public key (`U…`) and seed (`SU…`).
  static func user() throws -> (publicKey: String, seed: String) {
    guard sodium_init() >= 0 else { throw LabError("libsodium did not start") }
    var seed = [UInt8](repeating: 0, count: 32)
    var publicKey = [UInt8](repeating: 0, count: 32)
    var secretKey = [UInt8](repeating: 0, count: 64)
    randombytes_buf(&seed, 32)
    guard crypto_sign_seed_keypair(&publicKey, &secretKey, seed) == 0 else {
      throw LabError("no Ed25519 key pair")
    }
    let seedHead = [seedPrefix | (userPrefix >> 5), (userPrefix & 31) << 3]
    return (encode([userPrefix] + publicKey), encode(seedHead + seed))
  }

  static func encode(_ raw: [UInt8]) -> String {
    let crc = crc16(raw)
    return base32(raw + [UInt8(crc & 0xff), UInt8(crc >> 8)])
  }

  static func crc16(_ bytes: [UInt8]) -> UInt16 {
    var crc: UInt16 = 0
    for byte in bytes {
      crc ^= UInt16(byte) << 8
      for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
    }
    return crc
  }

  static func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    var text = ""
    var buffer = 0
    var bits = 0
    for byte in bytes {
      buffer = (buffer << 8) | Int(byte)
      bits += 8
      while bits >= 5 {
        text.append(alphabet[(buffer >> (bits - 5)) & 31])
        bits -= 5
      }
    }
    if bits > 0 { text.append(alphabet[(buffer << (5 - bits)) & 31]) }
    return text
  }
}
