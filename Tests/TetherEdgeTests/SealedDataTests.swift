// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore

@testable import TetherSodium

/// Protocol version 2's sealed datagrams (docs/PROTOCOL.md §12.7): TetherCore's
/// `SealedData` over libsodium's ChaCha20-Poly1305 through the `DatagramCipher` seam.
struct SealedDataTests {
  typealias Data = SealedData<SodiumDatagramCipher>

  /// RFC 8439 §2.8.2: the AEAD through the seam gives the RFC's bytes, and opens them.
  @Test func rfc8439_aeadVector() throws {
    let cipher = try #require(SodiumDatagramCipher(key: Array(0x80...0x9F)))
    let nonce: [UInt8] = [0x07, 0, 0, 0, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47]
    let ad: [UInt8] = [0x50, 0x51, 0x52, 0x53, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7]
    let text = Array(
      ("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
        + "future, sunscreen would be it.").utf8)
    var sealed = ad
    #expect(cipher.seal(nonce: nonce, plaintext: text[...], appendingTo: &sealed, adStart: 0))
    sealed.removeFirst(ad.count)
    #expect(CertificateKeyTests.hex(sealed) == Self.rfc8439Sealed)
    var opened: [UInt8] = []
    #expect(cipher.open(nonce: nonce, ad: ad[...], sealed: sealed[...], into: &opened))
    #expect(opened == text)
  }

  @Test func aKeyOfAnotherSize_isRefused() {
    #expect(SodiumDatagramCipher(key: [UInt8](repeating: 1, count: 31)) == nil)
  }

  @Test func whatOneSideSeals_theOtherOpens_inBothDirections() throws {
    var (device, edge) = try Self.pair()
    for n in 0..<20 {
      let payload = [UInt8](repeating: UInt8(n), count: 9 + n)
      var datagram: [UInt8] = []
      try device.seal(payload[...], into: &datagram)
      #expect(datagram.count == 17 + payload.count + 16 && datagram[0] == 0x07)
      #expect(Array(datagram[9..<17]) == [0, 0, 0, 0, 0, 0, 0, UInt8(n)])
      var opened: [UInt8] = []
      try edge.open(datagram[...], into: &opened)
      #expect(opened == payload)
      var back: [UInt8] = []
      try edge.seal(opened[...], into: &back)
      var echoed: [UInt8] = []
      try device.open(back[...], into: &echoed)
      #expect(echoed == payload)
    }
    #expect(device.usage.sealed == 20 && edge.usage.sealed == 20)
  }

  /// A datagram with any one bit flipped, at any offset, is refused and changes nothing:
  /// the genuine one still opens afterwards, and the window moved only then.
  @Test func everyBitFlip_atEveryOffset_isRefused_andChangesNothing() throws {
    var (device, edge) = try Self.pair()
    var datagram: [UInt8] = []
    try device.seal(Array("heartbeat".utf8)[...], into: &datagram)
    let before = edge.window
    var refusals: [Data.Refusal: Int] = [:]
    for offset in datagram.indices {
      for bit in 0..<8 {
        var forged = datagram
        forged[offset] ^= 1 << bit
        var out: [UInt8] = []
        do throws(Data.Refusal) {
          try edge.open(forged[...], into: &out)
          Issue.record("bit \(bit) of byte \(offset) opened")
        } catch {
          refusals[error, default: 0] += 1
        }
        #expect(out.isEmpty)
      }
    }
    #expect(edge.window == before)
    // Kind and session id flips are not this session's (malformed); counter, ciphertext
    // and tag flips fail to open.
    #expect(refusals[.malformed] == 9 * 8 && refusals[.unopened] == (datagram.count - 9) * 8)
    #expect(edge.unopened == UInt64((datagram.count - 9) * 8))
    var out: [UInt8] = []
    try edge.open(datagram[...], into: &out)
    #expect(out == Array("heartbeat".utf8))
  }

  @Test func aReplay_andATooOldCounter_areDroppedBeforeOpening() throws {
    var (device, edge) = try Self.pair()
    var first: [UInt8] = []
    try device.seal([1, 2, 3][...], into: &first)
    var out: [UInt8] = []
    try edge.open(first[...], into: &out)
    #expect(throws: Data.Refusal.replayed) { try edge.open(first[...], into: &out) }
    for _ in 0..<ReplayWindow.width {
      var next: [UInt8] = []
      try device.seal([4][...], into: &next)
      try edge.open(next[...], into: &out)
    }
    #expect(throws: Data.Refusal.replayed) { try edge.open(first[...], into: &out) }
    #expect(edge.replayed == 2 && edge.unopened == 0)
  }

  /// A forged datagram with a high counter and a bad tag does not push genuine ones out.
  @Test func aForgedHighCounter_withABadTag_thenGenuineOnes_allAccepted() throws {
    var (device, edge) = try Self.pair()
    var genuine: [[UInt8]] = []
    for _ in 0..<5 {
      var d: [UInt8] = []
      try device.seal([7][...], into: &d)
      genuine.append(d)
    }
    var forged = genuine[0]
    forged[11] = 0x01  // counter 2^40: far ahead, under the limits, with the tag of 0
    var out: [UInt8] = []
    #expect(throws: Data.Refusal.unopened) { try edge.open(forged[...], into: &out) }
    var pastTheLimit = genuine[0]
    for i in 9..<17 { pastTheLimit[i] = 0xFF }  // no key may open counter 2^64 - 1
    #expect(throws: Data.Refusal.replayed) { try edge.open(pastTheLimit[...], into: &out) }
    for d in genuine.reversed() { try edge.open(d[...], into: &out) }
    #expect(out == [7, 7, 7, 7, 7] && edge.window.highest == 4)
  }

  @Test func aKeyPastItsLimit_sealsNothingMore() throws {
    var limits = KeyLimits.standard
    limits.rekeyAfterMessages = 2
    limits.rejectAfterMessages = 3
    var (device, _) = try Self.pair(limits: limits)
    var out: [UInt8] = []
    for _ in 0..<3 { try device.seal([0][...], into: &out) }
    #expect(device.usage.status == .exhausted)
    let sealedBefore = out
    #expect(throws: Data.Refusal.exhausted) { try device.seal([0][...], into: &out) }
    #expect(out == sealedBefore)
  }

  @Test func tooShort_orAnotherKind_orAnotherSession_isMalformed() throws {
    var (device, edge) = try Self.pair()
    var datagram: [UInt8] = []
    try device.seal([9][...], into: &datagram)
    var out: [UInt8] = []
    #expect(throws: Data.Refusal.malformed) { try edge.open(datagram.prefix(33), into: &out) }
    var stranger = try Self.pair(session: 0x0102_0304_0506_0709).device
    var theirs: [UInt8] = []
    try stranger.seal([9][...], into: &theirs)
    #expect(throws: Data.Refusal.malformed) { try edge.open(theirs[...], into: &out) }
    #expect(out.isEmpty && edge.window.isEmpty)
  }

  static func cipher(_ fill: UInt8) -> SodiumDatagramCipher? {
    SodiumDatagramCipher(key: [UInt8](repeating: fill, count: 32))
  }

  static func pair(
    session: UInt64 = 0x0102_0304_0506_0708, limits: KeyLimits = .standard
  ) throws -> (device: Data, edge: Data) {
    let d2e = try #require(cipher(1))
    let e2d = try #require(cipher(2))
    return (
      Data(sessionID: session, sending: d2e, receiving: e2d, limits: limits),
      Data(sessionID: 0x0102_0304_0506_0708, sending: e2d, receiving: d2e, limits: limits)
    )
  }

  static let rfc8439Sealed =
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69"
    + "da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675"
    + "945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b61161ae10b594f09e26a7e902ecbd0600691"
}

/// The data cipher builds each datagram's nonce on the stack; its bytes are the seam's
/// `nonce(counter:)`, the nonce docs/PROTOCOL.md §12.7 gives.
struct DatagramNonceTests {
  @Test(arguments: [0, 1, 0xFF, 0x1_0000_0000, 0x0102_0304_0506_0708, UInt64.max])
  func stackNonce_isTheSeamsNonce(counter: UInt64) {
    var words = SodiumDatagramCipher.nonceWords(counter)
    let bytes = withUnsafeBytes(of: &words) { Array($0) }
    #expect(bytes == SodiumDatagramCipher.nonce(counter: counter))
  }
}
