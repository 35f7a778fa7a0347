// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// `--edge-id`'s default (docs/PROTOCOL.md §12.9): the host name and the port the edge is
/// bound to. It named the port of `--listen`, so every edge started with `--listen HOST:0`
/// had the id `HOST:0`.
struct EdgeIDDefaultTests {
  @Test func aDefaultEdgeID_takesTheBoundPort_aGivenOneStays() throws {
    let config = World.config()
    #expect(config.isDefaultEdgeID)
    #expect(config.bound(toPort: 7123).edgeID == EdgeID.hostDefault(port: 7123))
    #expect(config.bound(toPort: 7123).isDefaultEdgeID)
    var given = config
    given.edgeID = try #require(EdgeID("edge-7"))
    #expect(!given.isDefaultEdgeID)
    #expect(given.bound(toPort: 7123).edgeID == given.edgeID)
    let named = try EdgeConfig(
      appID: Fixture.appID, appCertificate: [1], edgeID: try #require(EdgeID("edge-8")))
    #expect(!named.isDefaultEdgeID && named.bound(toPort: 9).edgeID.description == "edge-8")
  }

  /// `--listen 127.0.0.1:0`: the loop's server has the host's name and the port the system
  /// picked, never `:0`; an edge id given stays as given.
  @Test func aLoopOnPortZero_namesItsBoundPort() throws {
    let stop = try StopSignal()
    let listen = try SocketAddress(parsing: "127.0.0.1:0")
    let loop = try EdgeLoop(config: World.config(), listen: listen, stop: stop)
    let port = loop.localAddress.port
    #expect(port != 0)
    #expect(loop.server.config.edgeID == EdgeID.hostDefault(port: port))
    #expect(!loop.server.config.edgeID.description.hasSuffix(":0"))

    var config = World.config()
    config.edgeID = try #require(EdgeID("fleet-edge-3"))
    let named = try EdgeLoop(config: config, listen: listen, stop: stop)
    #expect(named.server.config.edgeID.description == "fleet-edge-3")
  }
}
