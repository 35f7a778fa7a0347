// SPDX-License-Identifier: Apache-2.0
import Foundation
import TetherCore
import TetherEdge
import TetherSodium

/// What protocol version 2 costs on this machine, on libsodium (docs/PROTOCOL.md §12), in a
/// release build of the same code the device library and the edge run: a DATA datagram
/// sealed and one opened (a heartbeat's payload), a handshake on each side, and the bytes
/// of a heartbeat's round trip against version 1's. ARM boards: libsodium 1.0.18 has no
/// NEON ChaCha20, so a board runs the portable code; measure there with `tether-bench`
/// (its join and heartbeat figures include these costs).
struct SecureCosts {
  var sealNanoseconds = 0.0
  var openNanoseconds = 0.0
  /// The device's INIT written, then the RESPONSE taken (the CONFIRM and the keys made).
  var deviceHandshakeMicroseconds = 0.0
  /// The edge's INIT opened (token and request), the RESPONSE made, the CONFIRM checked.
  var edgeHandshakeMicroseconds = 0.0

  /// Version 1: HEARTBEAT 16 bytes, HEARTBEAT_ACK 24; version 2 (§12.7): 42 and 46. Version 1
  /// is removed (nothing speaks it any more): its figure is kept as written down, the cost
  /// version 2 is measured against (issue 25, item 9).
  static let heartbeatBytes = (v1: 16 + 24, v2: 42 + 46)

  enum Failure: Error { case handshake(String) }

  static func measure(datagrams: Int, handshakes: Int) throws -> SecureCosts {
    guard SodiumCrypto.start() else { throw Failure.handshake("libsodium did not start") }
    var costs = SecureCosts()
    (costs.sealNanoseconds, costs.openNanoseconds) = try perDatagram(count: datagrams)
    (costs.deviceHandshakeMicroseconds, costs.edgeHandshakeMicroseconds) = try perHandshake(
      count: handshakes)
    return costs
  }

  /// Nanoseconds to seal a heartbeat's payload (type, sequence, 4 zero bytes: §12.7) as a
  /// DATA datagram, and to open one.
  static func perDatagram(count: Int) throws -> (seal: Double, open: Double) {
    let crypto = SodiumCrypto()
    guard let one = crypto.cipher(key: crypto.randomBytes(count: 32)),
      let other = crypto.cipher(key: crypto.randomBytes(count: 32))
    else { throw Failure.handshake("no cipher") }
    var device = SealedData(sessionID: 7, sending: one, receiving: other)
    var edge = SealedData(sessionID: 7, sending: other, receiving: one)
    let payload: [UInt8] = [0x02, 0, 0, 0, 1, 0, 0, 0, 0]
    var sealed: [[UInt8]] = []
    sealed.reserveCapacity(count)
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count {
      var out: [UInt8] = []
      out.reserveCapacity(64)
      try device.seal(payload[...], into: &out)
      sealed.append(out)
    }
    let middle = DispatchTime.now().uptimeNanoseconds
    var opened: [UInt8] = []
    opened.reserveCapacity(64)
    for datagram in sealed {
      opened.removeAll(keepingCapacity: true)
      try edge.open(datagram[...], into: &opened)
    }
    let end = DispatchTime.now().uptimeNanoseconds
    guard opened == payload else { throw Failure.handshake("DATA did not round-trip") }
    return (
      Double(middle - start) / Double(count), Double(end - middle) / Double(count)
    )
  }

  /// Microseconds per handshake on each side, a channel join's (the token minted once).
  static func perHandshake(count: Int) throws -> (device: Double, edge: Double) {
    let crypto = SodiumCrypto()
    let keys = try CertificateKeys(certificate: Array("bench-certificate".utf8))
    let minter = TokenMinter(crypto: crypto, keys: keys)
    let opener = TokenOpener(crypto: crypto, current: keys)
    let appID = try AppID(validating: Array("bench-app".utf8))
    let channel = try ChannelName(validating: Array("bench".utf8))
    let text = minter.mint(appID: appID, grant: .channel(channel, uid: 0), expiresAt: 0)
    let token = try TokenV2(text: Array(text.utf8)[...], crypto: crypto)
    let request = HandshakeRequest(
      uid: 7, appID: appID.bytes, kind: HandshakeRequest.channelKind, name: channel.bytes)
    var deviceNanoseconds: UInt64 = 0
    var edgeNanoseconds: UInt64 = 0
    for serial in 0..<count {
      var device = DeviceHandshake(crypto: crypto)
      let t0 = DispatchTime.now().uptimeNanoseconds
      let initiation = try device.initiate(token: token, request: request)
      let t1 = DispatchTime.now().uptimeNanoseconds
      let opened = try opener.open(initiation.token)
      let edge = try EdgeHandshake(
        opening: initiation, deviceSecret: opened.deviceSecret, crypto: crypto)
      let pending = try edge.respond(
        ephemeralSecret: crypto.randomBytes(count: 32), edgeNonce: crypto.randomBytes(count: 16),
        sessionID: UInt64(serial + 1), ticketLifetimeMs: 10_000)
      let secret = pending.sessionSecret
      let response = try pending.finish(ticket: crypto.randomBytes(count: 176)[...])
      let t2 = DispatchTime.now().uptimeNanoseconds
      guard case .established(let established) = try device.receive(response.bytes[...]) else {
        throw Failure.handshake("the RESPONSE was not taken")
      }
      let t3 = DispatchTime.now().uptimeNanoseconds
      guard
        EdgeHandshake.confirmHolds(established.confirm, sessionSecret: secret, crypto: crypto)
      else { throw Failure.handshake("the CONFIRM did not hold") }
      let t4 = DispatchTime.now().uptimeNanoseconds
      deviceNanoseconds += (t1 - t0) + (t3 - t2)
      edgeNanoseconds += (t2 - t1) + (t4 - t3)
    }
    return (
      Double(deviceNanoseconds) / Double(count) / 1000,
      Double(edgeNanoseconds) / Double(count) / 1000
    )
  }
}
