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
    var bench = SecureBench(
      config: try EdgeConfig(
        appID: Fixture.appID, appCertificate: World.certificate, timeScale: 0.01))
    let start = bench.now
    for host: UInt8 in [1, 2] {
      var device = bench.device(.channel(Fixture.channel, uid: 0), host: host)
      bench.connect(&device, SecureBench.channelRequest())
    }
    #expect(bench.server.nextDeadline == start + .ms(10))
    #expect(bench.advance(by: .ms(10)).count == 2)
    #expect(bench.server.nextDeadline == start + .ms(20))
    _ = bench.advance(by: .ms(290))
    #expect(bench.server.sessionCount == 0)
  }

  @Test func peerAddress_keepsUpTo32Bytes() {
    #expect(PeerAddress(bytes: [UInt8](repeating: 7, count: 32))?.bytes.count == 32)
    #expect(PeerAddress(bytes: [UInt8](repeating: 7, count: 33)) == nil)
    #expect(PeerAddress(bytes: [1, 2]) != PeerAddress(bytes: [1, 2, 0]))
    #expect(PeerAddress(bytes: [1, 2]) == PeerAddress(bytes: [1, 2]))
  }
}
