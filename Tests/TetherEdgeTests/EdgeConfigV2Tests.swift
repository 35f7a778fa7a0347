// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The edge's protocol version 2 settings (`--edge-id`, `--handshake-rate`,
/// `--max-channel-members`, `--max-app-sessions`) and the ticket lifetime: kept in the
/// config, not used until version 2 is the wire.
struct EdgeConfigV2Tests {
  @Test func defaults_rate1000_capsAreMaxSessions_idIsTheHostAndPort() throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], maxSessions: 77)
    #expect(config.handshakeRate == 1000)
    #expect(config.maxChannelMembers == 77 && config.maxAppSessions == 77)
    #expect(config.edgeID == EdgeID.hostDefault(port: 0))
    #expect(config.edgeID.description.hasSuffix(":0"))
  }

  @Test func givenValues_areKept() throws {
    let id = try #require(EdgeID("edge-7.example:7000"))
    let config = try EdgeConfig(
      appID: Fixture.appID, appCertificate: [1], maxSessions: 100, edgeID: id, handshakeRate: 5,
      maxChannelMembers: 8, maxAppSessions: 200)
    #expect(config.edgeID == id && config.handshakeRate == 5)
    #expect(config.maxChannelMembers == 8 && config.maxAppSessions == 200)
  }

  @Test func invalidValues_areRefused() {
    for rate in [0, -1, 1_000_000_001] {
      #expect(throws: EdgeConfigError.invalidHandshakeRate) {
        try EdgeConfig(appID: Fixture.appID, appCertificate: [1], handshakeRate: rate)
      }
    }
    #expect(throws: EdgeConfigError.invalidMaxChannelMembers) {
      try EdgeConfig(appID: Fixture.appID, appCertificate: [1], maxChannelMembers: 0)
    }
    #expect(throws: EdgeConfigError.invalidMaxAppSessions) {
      try EdgeConfig(appID: Fixture.appID, appCertificate: [1], maxAppSessions: -3)
    }
  }

  @Test func edgeIDs_arePrintableASCII_1To255Bytes() {
    #expect(EdgeID("a")?.bytes == [0x61])
    #expect(EdgeID(String(repeating: "e", count: 255)) != nil)
    for bad in ["", String(repeating: "e", count: 256), "a b", "é", "tab\t"] {
      #expect(EdgeID(bad) == nil, "\(bad)")
    }
    #expect(EdgeID(hostName: "edge-1", port: 7000)?.description == "edge-1:7000")
    #expect(EdgeID.hostDefault(port: 7000).description.hasSuffix(":7000"))
  }

  /// 10 s × time scale, never under 3 s of real time.
  @Test(arguments: [
    (1.0, 10_000), (2, 20_000), (0.5, 5_000), (0.3, 3_000), (0.1, 3_000), (0.01, 3_000),
  ])
  func ticketLifetime_isTenSecondsScaled_withAThreeSecondFloor(scale: Double, ms: UInt64) throws {
    let config = try EdgeConfig(appID: Fixture.appID, appCertificate: [1], timeScale: scale)
    #expect(config.ticketLifetime == .milliseconds(ms))
  }
}
