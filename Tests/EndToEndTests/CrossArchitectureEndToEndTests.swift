// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// The seed timeline with device A built for an ARM board (the Embedded library for that
/// architecture) and run under qemu-user, against the host's tether-edge, with a native
/// x86_64 device B as its peer. Scaled by 1/10: qemu is slower than a board.
@Suite(.serialized, Lab.enabled) struct CrossArchitectureEndToEndTests {
  @Test(arguments: CrossDevice.all)
  func seedTimeline_onARM_underQemu(_ cross: CrossDevice) throws {
    try #require(cross.available || Lab.required, "build it with `make cross-test`")
    let scale = 0.1
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 2, edgePort: edge.port)
    defer { relay.stop() }
    let b = try Lab.device("B", edge: edge, relay: relay, index: 1, uid: 2, scale: scale)
    #expect(b.reaches("CONNECTED", "JOIN_SUCCESS"))
    let token = try edge.token(channel: Lab.channel, uid: 1, expireSeconds: 3600)
    let a = try DeviceProcess(
      binary: cross.binary, name: "A-\(cross.arch)", server: "127.0.0.1:\(relay.port(of: 0))",
      appID: edge.appID, channel: Lab.channel, uid: 1, token: token, scale: scale,
      launcher: cross.launcher)
    #expect(a.reaches("CONNECTED", "JOIN_SUCCESS", timeout: 20))
    #expect(b.waitFor("user-joined uid=1") != nil)
    relay.cut(0)
    let lastData = try a.expectInterrupted(
      0.4, afterLastAnswerThrough: relay, early: 0.005, late: 0.3)
    let lost = try #require(a.waitForState("RECONNECTING", "LOST"))
    #expect(lost.time >= lastData + 1.0 - 0.005 && lost.time <= lastData + 1.0 + 0.3)
    relay.heal(0)
    #expect(a.reaches("CONNECTED", "REJOIN_SUCCESS"))
    #expect(a.leave(timeout: 10) == 0)
    #expect(a.states.last == "DISCONNECTED LEAVE_CHANNEL")
    #expect(b.waitFor("user-offline uid=1 reason=QUIT") != nil)
    #expect(b.leave() == 0)
  }

  /// The login profile on ARM: login, an interruption and the reconnection, and a
  /// remote-login takeover, with the host built for that architecture under qemu-user.
  @Test(arguments: CrossDevice.all)
  func login_reconnect_remoteLogin_onARM_underQemu(_ cross: CrossDevice) throws {
    try #require(
      FileManager.default.isExecutableFile(atPath: cross.messaging) || Lab.required,
      "build it with `make cross-test`")
    let scale = 0.1
    let edge = try EdgeProcess(binary: Lab.edge, timeScale: scale)
    let relay = try Relay(devices: 1, edgePort: edge.port)
    defer { relay.stop() }
    let alice = try Lab.messaging(
      "A-\(cross.arch)", edge: edge, relay: relay, user: "alice", scale: scale,
      binary: cross.messaging, launcher: cross.launcher)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", timeout: 20))
    relay.cut(0)
    try alice.expectInterrupted(0.4, afterLastAnswerThrough: relay, early: 0.005, late: 0.3)
    relay.heal(0)
    #expect(alice.reaches("CONNECTED", "LOGIN_SUCCESS", from: alice.lines.count - 1))
    let native = try Lab.messaging("A-native", edge: edge, user: "alice", scale: scale)
    #expect(native.reaches("CONNECTED", "LOGIN_SUCCESS"))
    #expect(alice.reaches("ABORTED", "REMOTE_LOGIN"))
    #expect(alice.logout(timeout: 10) == 0)
    #expect(alice.reaches("DISCONNECTED", "LOGOUT"))
    #expect(native.logout() == 0)
  }
}
