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

  /// A short certificate starts the edge with a warning, never a refusal; a 32-byte one
  /// starts it without (protocol v2, docs/PROTOCOL.md §12.3).
  @Test func aShortCertificate_startsWithAWarning_aStrongOneWithout() throws {
    let short = try EdgeProcess(binary: Lab.edge, certificate: "secret", timeScale: 1)
    let warned = short.waitForLog(" warning the app certificate is short", timeout: 5)
    #expect(warned?.hasSuffix(" bytes=6 strong_from=32") == true, "\(short.log)")
    #expect(short.stop(signal: SIGTERM) == 0)

    let strong = try EdgeProcess(
      binary: Lab.edge, certificate: String(repeating: "k", count: 32), timeScale: 1)
    #expect(strong.waitForLog(" notice listening ", timeout: 5) != nil)
    #expect(strong.stop(signal: SIGTERM) == 0)
    #expect(!strong.log.contains { $0.contains(" warning ") }, "\(strong.log)")
  }

  /// `tether-edge certificate`: 32 fresh random bytes as 43 base64url characters.
  @Test func certificateCommand_printsAFreshStrongOne() throws {
    var printed: [String] = []
    for _ in 0..<2 {
      let process = try ManagedProcess(
        name: "certificate", executable: Lab.edge, arguments: ["certificate"])
      #expect(process.waitExit(timeout: 10) == 0)
      printed += process.lines.map(\.text)
    }
    #expect(printed.count == 2 && printed[0] != printed[1], "\(printed)")
    let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    for line in printed {
      #expect(line.count == 43 && line.allSatisfy(alphabet.contains), "\(line)")
      let decoded = Data(
        base64Encoded: line.replacingOccurrences(of: "-", with: "+")
          .replacingOccurrences(of: "_", with: "/") + "=")
      #expect(decoded?.count == 32)
    }
  }

  @Test func sigint_stopsCleanly_too() throws {
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: 1)
    #expect(edge.stop(signal: SIGINT) == 0)
    let last = try #require(edge.log.last)
    #expect(last.hasSuffix(" notice stopped logins=0 sessions=0 signal=SIGINT"), "\(last)")
  }
}
