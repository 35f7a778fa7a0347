// SPDX-License-Identifier: Apache-2.0
import Foundation
import TetherLab

// The login profile on real processes: tether-edge and three C hosts of examples/messaging
// through a relay. alice and bob log in and join "lobby"; alice's link is cut for less
// than the server's online grace (bob notices nothing), then for longer (bob gets
// member-left, then member-joined when alice is back and has re-joined by herself); then a
// third process logs in as alice, and the first goes ABORTED/REMOTE_LOGIN. Every threshold
// is scaled by `scale`, the edge's grace with it (--time-scale).

/// The login profile's demo with examples/messaging; returns how many events were missed,
/// nil when it could not run.
func loginDemo(_ setup: Setup) -> Int? {
  let (scale, interrupted, retryCap) = (setup.scale, setup.interrupted, setup.retryCap)
  let grace = 30.0 * scale
  let (a, b, c) = (0, 1, 2)
  return demo(
    "Login profile (tether_rtm_*)", setup, devices: 3,
    hosts: "; alice (A), bob (B) and alice again (C)",
    thresholds: ["interrupted": interrupted, "online grace": grace]
  ) { report, edge, relay in
    func host(_ index: Int, _ name: String, user: String) throws -> MessagingProcess {
      try MessagingProcess(
        binary: setup.messaging, name: name, server: "127.0.0.1:\(relay.port(of: index))",
        appID: edge.appID, userID: user, token: try edge.token(userID: user, expireSeconds: 3600),
        channels: ["lobby"], scale: scale)
    }

    let alice = try host(a, "A", user: "alice")
    guard let loginLine = alice.waitForState("CONNECTING", "LOGIN") else {
      throw LabError("alice did not start")
    }
    report.t0 = loginLine.time
    let t0 = report.t0
    report.exact("login: CONNECTING / LOGIN", "A", at: 0, loginLine)
    report.exact(
      "login-result LOGIN_ERR_OK", "A", at: 0, alice.waitFor("login-result LOGIN_ERR_OK"))
    report.exact(
      "CONNECTED / LOGIN_SUCCESS", "A", at: 0, alice.waitForState("CONNECTED", "LOGIN_SUCCESS"))

    let bob = try host(b, "B", user: "bob")
    guard let bobJoin = bob.waitFor("join-channel lobby rc=0") else {
      throw LabError("bob did not join lobby")
    }
    report.exact(
      "CONNECTED / LOGIN_SUCCESS", "B", at: bobJoin.time - t0,
      bob.waitForState("CONNECTED", "LOGIN_SUCCESS"))
    report.window(
      "member-joined lobby bob", "A", after: bobJoin.time - t0,
      by: bobJoin.time - t0 + report.tolerance,
      alice.waitFor("member-joined channel=lobby user=bob"))

    // A short cut: alice is back well within the grace; bob must notice nothing.
    sleep(until: t0 + 5 * scale)
    let aliceBefore = alice.lines.count
    let bobBefore = bob.lines.count
    let cut = report.cut(
      relay, a, "link to A cut (last answer to A at %+.0f ms)", showing: \.lastAnswer,
      interrupting: alice, "A", from: aliceBefore, after: interrupted)
    sleep(until: cut.at + 15 * scale)
    let healAt = report.heal(relay, a, "link to A healed (before the grace ends)")
    report.window(
      "CONNECTED / LOGIN_SUCCESS (no login-result)", "A", after: healAt - t0,
      by: healAt - t0 + retryCap,
      alice.waitForState("CONNECTED", "LOGIN_SUCCESS", from: aliceBefore))
    sleep(until: healAt + grace)
    report.never("member-left lobby alice", "B", bob.first("member-left", from: bobBefore))
    report.never("login-result (a second one)", "A", alice.first("login-result", from: aliceBefore))

    // A long cut: past the grace bob gets member-left; back, alice re-joins by herself.
    let aliceBeforeLong = alice.lines.count
    let bobBeforeLong = bob.lines.count
    let longCut = report.cut(
      relay, a, "link to A cut (last from A at %+.0f ms)", showing: \.lastFrom,
      interrupting: alice, "A", from: aliceBeforeLong, after: interrupted)
    report.exact(
      "member-left lobby alice (grace over)", "B", at: longCut.lastFrom - t0 + grace,
      bob.waitFor("member-left channel=lobby user=alice", from: bobBeforeLong))
    sleep(until: longCut.at + 45 * scale)
    let longHealAt = report.heal(relay, a, "link to A healed (after the grace)")
    report.window(
      "CONNECTED / LOGIN_SUCCESS", "A", after: longHealAt - t0, by: longHealAt - t0 + retryCap,
      alice.waitForState("CONNECTED", "LOGIN_SUCCESS", from: aliceBeforeLong))
    report.window(
      "member-joined lobby alice (re-joined by itself)", "B", after: longHealAt - t0,
      by: longHealAt - t0 + retryCap + report.tolerance,
      bob.waitFor("member-joined channel=lobby user=alice", from: bobBeforeLong))

    // A third process logs in as alice: the first is taken over.
    sleep(until: longHealAt + 10 * scale)
    let aliceBeforeTakeover = alice.lines.count
    let bobBeforeTakeover = bob.lines.count
    let second = try host(c, "C", user: "alice")
    guard let secondLogin = second.waitForState("CONNECTED", "LOGIN_SUCCESS") else {
      throw LabError("the second alice did not log in")
    }
    let loginAt = secondLogin.time - t0
    report.exact("CONNECTED / LOGIN_SUCCESS", "C", at: loginAt, secondLogin)
    report.window(
      "ABORTED / REMOTE_LOGIN", "A", after: loginAt - report.tolerance,
      by: loginAt + report.tolerance,
      alice.waitForState("ABORTED", "REMOTE_LOGIN", from: aliceBeforeTakeover))
    report.window(
      "member-left lobby alice (taken over)", "B", after: loginAt - report.tolerance,
      by: loginAt + report.tolerance,
      bob.waitFor("member-left channel=lobby user=alice", from: bobBeforeTakeover))
    report.window(
      "member-joined lobby alice (C joined)", "B", after: loginAt, by: loginAt + report.tolerance,
      bob.waitFor("member-joined channel=lobby user=alice", from: bobBeforeTakeover))

    let logoutAt = report.goodbye(
      "logout: DISCONNECTED / LOGOUT", "C", second, line: "state DISCONNECTED LOGOUT"
    ) { _ = second.logout() }
    report.exact(
      "member-left lobby alice (logged out)", "B", at: logoutAt - t0,
      bob.waitFor(
        "member-left channel=lobby user=alice",
        from: bob.lines.lastIndex { $0.text.contains("member-joined channel=lobby user=alice") }
          .map { $0 + 1 } ?? bobBeforeTakeover))
    _ = bob.logout()
    alice.stop()
  }
}
