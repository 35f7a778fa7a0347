// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The admin datagrams' codec (Auth/AdminKick.swift; docs/PROTOCOL.md "Admin: KICK" and
/// "Admin: KICK_USER"): each command round-trips, its layout is pinned, and every changed
/// byte, cut, trailing byte, other certificate or other app is refused.
struct AdminKickTests {
  static let certificate = World.certificate
  static let kick = AdminKick(
    channel: try! ChannelName(validating: Array("lobby".utf8)), uid: 1_000_000, banSeconds: 60,
    unixTime: 1_700_000_000, nonce: 0x0102_0304_0506_0708)
  static let kickUser = AdminKickUser(
    userID: try! UserID(validating: Array("alice".utf8)), banSeconds: 60,
    unixTime: 1_700_000_000, nonce: 0x0102_0304_0506_0708)
  static let requests: [AdminRequest] = [.kick(kick), .kickUser(kickUser)]

  static func sealed(_ request: AdminRequest, appID: AppID = Fixture.appID) -> [UInt8] {
    switch request {
    case .kick(let kick): kick.sealed(appID: appID, certificate: certificate)
    case .kickUser(let kick): kick.sealed(appID: appID, certificate: certificate)
    }
  }

  static func open(
    _ bytes: ArraySlice<UInt8>, certificate: [UInt8] = certificate, appID: AppID = Fixture.appID
  )
    throws(AdminError) -> AdminRequest
  {
    try AdminRequest.open(bytes, appID: appID, certificate: certificate)
  }

  @Test(arguments: requests)
  func sealed_opens_toTheSameRequest_byItsTypeAndAsAnAdminRequest(_ request: AdminRequest) throws {
    let bytes = Self.sealed(request)
    #expect(try Self.open(bytes[...]) == request)
    #expect(AdminKick.hasMagic(bytes[...]))
    let kick = try? AdminKick.open(bytes[...], appID: Fixture.appID, certificate: Self.certificate)
    let kickUser = try? AdminKickUser.open(
      bytes[...], appID: Fixture.appID, certificate: Self.certificate)
    switch request {
    case .kick(let sent):
      #expect(kick == sent)
      #expect(kickUser == nil)
    case .kickUser(let sent):
      #expect(kickUser == sent)
      #expect(kick == nil)
    }
  }

  /// "TA", version 2, the command, app id "app-1", the target (channel "lobby" and uid
  /// 1,000,000; or user id "alice"), ban 60 s, time, nonce, then the MAC.
  static let layouts: [(AdminRequest, [UInt8], Int)] = {
    let app: [UInt8] = [0x05] + Array("app-1".utf8)
    let lobby: [UInt8] = [0x05] + Array("lobby".utf8) + [0x00, 0x0F, 0x42, 0x40]
    let alice: [UInt8] = [0x05] + Array("alice".utf8)
    return [
      (requests[0], [0x01] + app + lobby, 30 + 5 + 5 + 32),
      (requests[1], [0x02] + app + alice, 58 + 5 + 5),
    ]
  }()

  @Test(arguments: layouts)
  func sealed_layout_isPinned(_ request: AdminRequest, head: [UInt8], count: Int) {
    let bytes = Self.sealed(request)
    let tail: [UInt8] = [
      0x00, 0x00, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xF1, 0x00,
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ]
    let expected = [0x54, 0x41, 0x02] + head + tail
    #expect(Array(bytes.prefix(expected.count)) == expected)
    #expect(bytes.count == count)
  }

  /// The MAC is `PRF(K_admin, request, "tether2 admin")` (docs/PROTOCOL.md §12.14), the
  /// expected bytes computed apart with PyNaCl's BLAKE2b from contrib/python/tether_token.py's
  /// `master_key` and `kdf(M, 3)` for certificate "cert-1".
  @Test func sealed_mac_isPRFUnderKAdmin_asPyNaClComputesIt() {
    let expected = [
      "3fbbf3fbc3beb241b465ba2761cd0713bda68cc3338c19f5c44f89de096bec75",
      "a40b2ac49b4e4ad54fba490dcc9a5192ea8a6375ce40b4c549f45d8598219158",
    ]
    for (request, mac) in zip(Self.requests, expected) {
      let bytes = Self.sealed(request)
      #expect(bytes.suffix(32).map { String(format: "%02x", $0) }.joined() == mac)
    }
  }

  @Test(arguments: requests)
  func open_refuses_everyChangedByte_everyCut_andATrailingByte(_ request: AdminRequest) {
    let bytes = Self.sealed(request)
    for index in bytes.indices {
      var tampered = bytes
      tampered[index] ^= 0x01
      #expect(throws: AdminError.self, "byte \(index)") { try Self.open(tampered[...]) }
    }
    for count in 0..<bytes.count {
      #expect(throws: AdminError.self) { try Self.open(bytes.prefix(count)) }
    }
    #expect(throws: AdminError.malformed) { try Self.open((bytes + [0])[...]) }
  }

  @Test(arguments: requests)
  func open_refuses_anotherCertificate_andAnotherApp(_ request: AdminRequest) throws {
    let bytes = Self.sealed(request)
    #expect(throws: AdminError.badMAC) {
      try Self.open(bytes[...], certificate: Array("cert-2".utf8))
    }
    let other = try AppID(validating: Array("app-2".utf8))
    #expect(throws: AdminError.wrongApp) { try Self.open(bytes[...], appID: other) }
  }

  @Test func open_aUserIDWithASpace_isMalformed() {
    var bytes = Self.sealed(.kickUser(Self.kickUser))
    bytes[11] = 0x20  // the user id's first byte
    #expect(throws: AdminError.malformed) {
      try AdminKickUser.open(bytes[...], appID: Fixture.appID, certificate: Self.certificate)
    }
  }
}
