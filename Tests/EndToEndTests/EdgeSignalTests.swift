// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// `tether-edge serve` as an operator runs it: its log on stderr (one line per session
/// event), and a clean stop on SIGTERM or SIGINT (the final `stopped` line, exit status 0).
@Suite(.serialized, Lab.enabled) struct EdgeSignalTests {
  @Test func sigterm_withAMemberJoined_logsTheJoin_thenStopsCleanly() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: 1)
    #expect(edge.waitForLog(" notice listening address=127.0.0.1:\(edge.port)", timeout: 5) != nil)
    let device = try Lab.device("D7", edge: edge, uid: 7, scale: 1)
    defer { device.stop() }
    #expect(device.reaches("CONNECTED", "JOIN_SUCCESS"))
    let join = try #require(edge.waitForLog(" info join ", timeout: 5))
    #expect(join.hasSuffix(" info join channel=lobby uid=7"))

    #expect(edge.stop(signal: SIGTERM) == 0)
    let last = try #require(edge.log.last)
    #expect(last.hasSuffix(" notice stopped logins=0 sessions=1 signal=SIGTERM"), "\(last)")
  }

  @Test func sigint_stopsCleanly_too() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: 1)
    #expect(edge.stop(signal: SIGINT) == 0)
    let last = try #require(edge.log.last)
    #expect(last.hasSuffix(" notice stopped logins=0 sessions=0 signal=SIGINT"), "\(last)")
  }
}
