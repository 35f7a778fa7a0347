// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The server's settings and their time scale.
struct EdgeConfigTests {
  @Test func defaults_areOneSecond_thirtySeconds_oneSecond_10000Sessions() throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1])
    #expect(config.presenceInterval == .seconds(1))
    #expect(config.forgetAfter == .seconds(30))
    #expect(config.tokenCheckInterval == .seconds(1))
    #expect(config.maxSessions == 10_000)
  }

  @Test func timeScale_multipliesEveryTimingConstant_withAOneMillisecondFloor() throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: 0.01)
    #expect(config.presenceInterval == .ms(10))
    #expect(config.forgetAfter == .ms(300))
    #expect(config.tokenCheckInterval == .ms(10))
    let tiny = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: 1e-9)
    #expect(tiny.presenceInterval == .ms(1))
  }

  @Test func invalidSettings_areRefused() {
    #expect(throws: EdgeConfigError.emptyCertificate) {
      try EdgeConfig(appID: Fixture.appID, appCertificate: [])
    }
    for scale in [0, -1, .infinity, .nan, 1001] {
      #expect(throws: EdgeConfigError.invalidTimeScale) {
        try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: scale)
      }
    }
    #expect(throws: EdgeConfigError.invalidMaxSessions) {
      try EdgeConfig(appID: Fixture.appID, appCertificate: [1], maxSessions: 0)
    }
  }

  @Test func scaledServer_relaysPresenceOnItsScaledGrid() throws {
    var server = EdgeServer(
      config: try EdgeConfig(
        appID: Fixture.appID, appCertificate: World.certificate, timeScale: 0.01))
    for cookie: UInt64 in [1, 2] {
      let request = JoinRequest(
        uid: 0, appID: Fixture.appID, channel: Fixture.channel, token: World.token(expiresAt: 0),
        isRejoin: false)
      let bytes = Packet(cookie: cookie, message: .join(request)).encoded
      _ = server.receive(
        bytes[...], from: World.address(Int(cookie)), now: .zero, wallClock: World.wallBase)
    }
    #expect(server.nextDeadline == .ms(10))
    #expect(server.tick(now: .ms(10), wallClock: World.wallBase).count == 2)
    #expect(server.nextDeadline == .ms(20))
    _ = server.tick(now: .ms(300), wallClock: World.wallBase)
    #expect(server.sessionCount == 0)
  }

  @Test func peerAddress_keepsUpTo32Bytes() {
    #expect(PeerAddress(bytes: [UInt8](repeating: 7, count: 32))?.bytes.count == 32)
    #expect(PeerAddress(bytes: [UInt8](repeating: 7, count: 33)) == nil)
    #expect(PeerAddress(bytes: [1, 2]) != PeerAddress(bytes: [1, 2, 0]))
    #expect(PeerAddress(bytes: [1, 2]) == PeerAddress(bytes: [1, 2]))
  }
}
