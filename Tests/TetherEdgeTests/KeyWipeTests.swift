// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim
import TetherSodium

@_spi(Link) @testable import TetherCore
@testable import TetherEdge

/// Keys the device's layer drops are wiped where it holds them (docs/SECURITY.md, "Keys in
/// memory"): a session's data keys when it ends and when a rekey's ACCEPT replaces them,
/// and a held RESPONSE's keys when it is dropped before its ACCEPT; the edge's, when it
/// forgets a session. Each test records every buffer the code asks libsodium to wipe
/// (before the wipe) and looks for the keys in one of them.
struct KeyWipeTests {
  typealias Rig = LinkRig<ChannelSession<SeededRandom>, WipeRecordingCrypto>

  /// Both directions' keys of `data`, as the ciphers hold them.
  static func keys(_ data: SealedData<SodiumDatagramCipher>) -> [[UInt8]] {
    [
      withUnsafeBytes(of: data.sending) { Array($0) },
      withUnsafeBytes(of: data.receiving) { Array($0) },
    ]
  }

  func rig(limits: KeyLimits = .standard) throws -> (Rig, WipeLog) {
    let log = WipeLog()
    let rig = try Rig(edge: try MemoryEdge(), crypto: WipeRecordingCrypto(log: log), limits: limits)
    return (rig, log)
  }

  func joined(limits: KeyLimits = .standard) throws -> (Rig, WipeLog, [[UInt8]]) {
    var (rig, log) = try rig(limits: limits)
    try rig.join(rig.edge.token(channel: "room", uid: 7))
    try rig.pump()
    #expect(rig.session.state == .connected)
    let data = try #require(rig.link.data)
    let keys = Self.keys(data)
    #expect(keys.allSatisfy { $0.count == 32 && $0.contains { $0 != 0 } })
    log.wiped.removeAll()
    return (rig, log, keys)
  }

  /// leave(): the session ends, and the buffer its data keys were held in is wiped.
  @Test func leave_wipesTheSessionsDataKeys() throws {
    var (rig, log, keys) = try joined()
    try rig.call { session, output, now in session.leave(now: now, into: &output) }
    _ = rig.drain()
    #expect(rig.link.data == nil && rig.link.sessionID == 0)
    #expect(log.wipedOne(holding: keys))
  }

  /// A rekey: the resumed handshake's ACCEPT puts new keys in place of the old, and the
  /// old ones are wiped where they were held; the new ones are the session's.
  @Test func rekeysAccept_wipesTheOldDataKeys() throws {
    var limits = KeyLimits.standard
    limits.rekeyAfterMessages = 3
    var (rig, log, old) = try joined(limits: limits)
    let oldID = rig.link.sessionID
    try rig.run(for: .seconds(4))
    #expect(rig.link.sessionID != oldID && rig.session.state == .connected)
    let new = Self.keys(try #require(rig.link.data))
    #expect(new != old)
    #expect(log.wipedOne(holding: old))
  }

  /// A RESPONSE held (its CONFIRM sent), then the join given up before the ACCEPT: the
  /// keys the RESPONSE made are wiped where they were held.
  @Test func aHeldResponseDropped_isWiped() throws {
    var (rig, log) = try rig()
    try rig.join(rig.edge.token(channel: "room", uid: 7))
    let inits = rig.drain()
    #expect(inits.count == 1 && inits.first?.first == 0x01)
    for datagram in inits {
      for answer in try rig.edge.handle(datagram[...]) { rig.deliver(answer) }
    }
    let held = try #require(rig.link.held)
    let keys = Self.keys(held.data)
    log.wiped.removeAll()
    try rig.call { session, output, now in session.leave(now: now, into: &output) }
    _ = rig.drain()
    #expect(rig.link.held == nil)
    #expect(log.wipedOne(holding: keys))
  }

  /// The edge forgets a session: `k_resume` and both data keys are wiped in its table.
  @Test func theEdgeForgettingASession_wipesItsKeys() throws {
    let log = WipeLog()
    let crypto = WipeRecordingCrypto(log: log)
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: World.certificate)
    var front = SecureFront(config: config, crypto: crypto)
    let address = try #require(PeerAddress(bytes: [127, 0, 0, 1, 0x1F, 0x90]))
    try front.register(id: 0x0102, sessionSecret: crypto.randomBytes(count: 32), address: address)
    let session = try #require(front[0x0102])
    let keys = Self.keys(session.data)
    let resume = session.resumeKey
    log.wiped.removeAll()
    front.forget(0x0102)
    #expect(!front.holds(0x0102))
    #expect(log.wipedOne(holding: keys))
    #expect(log.wipedOne(holding: [resume]))
  }
}
