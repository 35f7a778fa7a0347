import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The admin datagram's codec (Auth/AdminKick.swift, docs/PROTOCOL.md "Admin: KICK").
struct AdminKickTests {
  static let certificate = Array("cert-1".utf8)
  static let request = AdminKick(
    channel: try! ChannelName(validating: Array("lobby".utf8)), uid: 1_000_000, banSeconds: 60,
    unixTime: 1_700_000_000, nonce: 0x0102_0304_0506_0708)

  @Test func sealed_opens_toTheSameRequest() throws {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: Self.certificate)
    #expect(
      try AdminKick.open(bytes[...], appID: Fixture.appID, certificate: Self.certificate)
        == Self.request)
  }

  @Test func sealed_layout_isPinned() {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: Self.certificate)
    // "TA", version 1, KICK, app id "app-1", channel "lobby", uid, ban, time, nonce, MAC.
    let head: [UInt8] =
      [0x54, 0x41, 0x01, 0x01, 0x05] + Array("app-1".utf8) + [0x05] + Array("lobby".utf8)
    let fields: [UInt8] = [
      0x00, 0x0F, 0x42, 0x40, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xF1,
      0x00,
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ]
    #expect(Array(bytes.prefix(head.count + fields.count)) == head + fields)
    #expect(bytes.count == 30 + 5 + 5 + 32)
    #expect(AdminKick.hasMagic(bytes[...]))
  }

  @Test func open_refuses_everyChangedByte() {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: Self.certificate)
    for index in bytes.indices {
      var tampered = bytes
      tampered[index] ^= 0x01
      #expect(throws: AdminError.self) {
        try AdminKick.open(tampered[...], appID: Fixture.appID, certificate: Self.certificate)
      }
    }
  }

  @Test func open_refuses_anotherCertificate_anotherApp_andEveryTruncation() throws {
    let bytes = Self.request.sealed(appID: Fixture.appID, certificate: Self.certificate)
    #expect(throws: AdminError.badMAC) {
      try AdminKick.open(bytes[...], appID: Fixture.appID, certificate: Array("cert-2".utf8))
    }
    let other = try AppID(validating: Array("app-2".utf8))
    #expect(throws: AdminError.wrongApp) {
      try AdminKick.open(bytes[...], appID: other, certificate: Self.certificate)
    }
    for count in 0..<bytes.count {
      #expect(throws: AdminError.self) {
        try AdminKick.open(bytes.prefix(count), appID: Fixture.appID, certificate: Self.certificate)
      }
    }
    #expect(throws: AdminError.malformed) {
      try AdminKick.open((bytes + [0])[...], appID: Fixture.appID, certificate: Self.certificate)
    }
  }
}
