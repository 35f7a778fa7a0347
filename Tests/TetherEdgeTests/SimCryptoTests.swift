// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

/// The simulation's crypto seam: its seeded stream is `randombytes_buf_deterministic`'s
/// (made a block at a time), and its nonce oracle fails a run that seals two messages under
/// one (key, nonce), across an edge restart too.
struct SimCryptoTests {
  /// Draws of every size, across block boundaries, are the stream's prefix in order; copies
  /// share the stream.
  @Test func seededDraws_areTheDeterministicStreamInOrder() {
    let crypto = SeededCrypto(seed: 5)
    let copy = crypto
    var drawn: [UInt8] = []
    for (index, size) in [1, 63, 64, 65, 7, 200, 3, 0, 129].enumerated() {
      drawn += (index % 2 == 0 ? crypto : copy).randomBytes(count: size)
    }
    #expect(drawn == SeededCrypto.prefix(drawn.count, seed: 5))
    #expect(crypto.drawn == drawn.count)
  }

  /// Two messages under one key and nonce: one repeat, of the AEAD, the XAEAD or a data
  /// key's counter. The same message sealed again (a tag checked by computing it) is not.
  @Test func theOracle_firesOnANonceUsedTwice() throws {
    let crypto = SimCrypto(seed: 1)
    let key = [UInt8](repeating: 7, count: 32)
    let zero = [UInt8](repeating: 0, count: 12)
    _ = crypto.aeadSeal(key: key, nonce: zero, ad: [1][...], plaintext: [][...])
    _ = crypto.aeadSeal(key: key, nonce: zero, ad: [1][...], plaintext: [][...])
    #expect(crypto.oracle.repeats.isEmpty && crypto.oracle.recomputed == 1)
    _ = crypto.aeadSeal(key: key, nonce: zero, ad: [2][...], plaintext: [][...])
    #expect(crypto.oracle.repeats.map(\.kind) == [.aead])

    let nonce = crypto.randomBytes(count: 24)
    _ = crypto.xaeadSeal(key: key, nonce: nonce, ad: [][...], plaintext: [1][...])
    _ = crypto.xaeadSeal(key: key, nonce: nonce, ad: [][...], plaintext: [2][...])
    #expect(crypto.oracle.repeats.map(\.kind) == [.aead, .xaead])

    let cipher = try #require(crypto.cipher(key: key))
    var out: [UInt8] = [0x07]
    #expect(cipher.seal(counter: 9, plaintext: [1][...], appendingTo: &out, adStart: 0))
    out = [0x07]
    #expect(cipher.seal(counter: 10, plaintext: [1][...], appendingTo: &out, adStart: 0))
    #expect(crypto.oracle.repeats.count == 2)
    out = [0x07]
    #expect(cipher.seal(counter: 9, plaintext: [2][...], appendingTo: &out, adStart: 0))
    #expect(crypto.oracle.repeats.map(\.kind) == [.aead, .xaead, .data])
    #expect(crypto.oracle.repeats.last?.nonce == SimCipher.nonce(counter: 9))
  }

  /// Two clients over version 2 on one edge, which restarts: they rejoin with nothing
  /// sealed twice (the restarted edge draws new keys from the world's stream). Then a
  /// repeat injected through the world's seam is the run's violation.
  @Test func aWorld_failsOnARepeatedNonce_andARestartRepeatsNone() throws {
    var world = SecureWorld<Harness>(crypto: SimCrypto(seed: 3), watchesServer: true)
    for i in 0..<2 {
      world.addClient()
      try world.join(i, uid: UInt32(i + 1))
    }
    world.run(for: .seconds(2))
    #expect(world.clients.allSatisfy { $0.state == .connected })
    world.restartServer()
    world.run(for: .seconds(20))
    #expect(world.clients.allSatisfy { $0.state == .connected })
    #expect(world.violations.isEmpty, "\(world.violations)")
    #expect(world.crypto.oracle.seals > 100)
    // The edge answered in version 2 only (version 1 starts 0x54), and the world still read
    // the version 1 messages its sealed datagrams stand for.
    #expect(!world.serverSent.isEmpty && world.serverSent.allSatisfy { $0.bytes.first != 0x54 })
    #expect(world.accepts(to: 0).count >= 2 && world.accepts(to: 1).count >= 2)

    let key = [UInt8](repeating: 1, count: 32)
    let nonce = [UInt8](repeating: 0, count: 12)
    _ = world.crypto.aeadSeal(key: key, nonce: nonce, ad: [][...], plaintext: [1][...])
    _ = world.crypto.aeadSeal(key: key, nonce: nonce, ad: [][...], plaintext: [2][...])
    world.run(for: .seconds(1))
    #expect(world.violations.map(\.invariant) == ["nonce"])
  }

  /// Found by the scenarios over version 2 (seed 91): a LEAVE sent between a resumed
  /// rejoin's CONFIRM and its ACCEPT. §12.10 says DATA then goes under the CONFIRM's keys
  /// "so a LEAVE sent then reaches an edge that made the session"; the layer seals it under
  /// the keys the last ACCEPT confirmed, whose id the edge renamed at the CONFIRM, so the
  /// edge answers RESET, keeps the session, and forgets it only after forget-after.
  @Test func aLeaveBetweenAResumesConfirmAndItsAccept_endsTheSession() throws {
    var world = SecureWorld<Harness>(crypto: SimCrypto(seed: 4))
    world.addClient()
    world.uplink[0] = LinkConditions(latency: .ms(10))
    world.downlink[0] = LinkConditions(latency: .ms(10))
    try world.join(0, uid: 1)
    world.run(for: .seconds(1))
    #expect(world.clients[0].state == .connected)
    // A rejoin with resume: INIT out at once, RESPONSE back at 20 ms, CONFIRM out then,
    // ACCEPT back at 40 ms. The app leaves at 25 ms, between the two.
    world.act(0) { s, now, out in s.networkChanged(byUser: true, now: now, into: &out) }
    world.run(for: .ms(25))
    world.leave(0)
    world.run(for: .ms(100))
    // The LEAVE goes under the CONFIRM's keys (the edge renamed the session at it): the
    // edge ends the session at once.
    #expect(world.server.sessionCount == 0)
  }
}
