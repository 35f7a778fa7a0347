// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherCore
import TetherSim
import TetherSodium

@testable import TetherEdge

/// A session the edge ended with a KICK stays ended for its device while the edge repeats
/// the KICK (forget-after, docs/PROTOCOL.md §5.5): a rejoin that resumes it (its KICK lost
/// while it was already rejoining) gets the KICK again, sealed under the ended session's
/// keys, and no new session, as version 1 answered a JOIN or LOGIN under a kicked cookie. It
/// would otherwise take its uid or user id back from the device that took it over (and that
/// one would be kicked in turn), or bring a kicked device back in. And a repeated ACCEPT
/// says `resumed` as the first did (§12.6).
struct EdgeKickedResumeTests {
  typealias Bench = SecureBench
  static let lobby = Bench.channel("lobby")

  // MARK: - Real devices (the world)

  @Test func aDeviceTakenOverWhileRejoining_getsSameUid_andTheNewHolderKeepsTheUid() throws {
    var world = World()
    let first = world.addClient()
    let second = world.addClient()
    try world.join(first, uid: 7)
    world.run(for: .seconds(1))
    world.linkUp[first] = false
    world.run(for: .seconds(5))  // INTERRUPTED at +4 s: rejoining, its INITs lost
    #expect(world.clients[first].session.state == .reconnecting)
    try world.join(second, uid: 7)  // takes uid 7 over; the KICK SAME_UID to the first is lost
    world.linkUp[first] = true
    world.run(for: .seconds(20))
    #expect(world.clients[first].lastState == .connectionStateChanged(.failed, .sameUIDLogin))
    #expect(world.clients[second].lastState == .connectionStateChanged(.connected, .joinSuccess))
    #expect(world.serverSession(of: second)?.uid == 7)
    #expect(world.server.members(of: Fixture.channel) == [7])
    #expect(world.server.sessionCount == 1)
    #expect(world.accepts(to: first).count == 1)  // its first only: no session made again
    #expect(world.server.counters.noticesRepeated >= 1)
  }

  @Test func aDeviceKickedWithoutABanWhileRejoining_getsTheKick_andIsNotBackIn() throws {
    var world = World()
    let a = world.addClient()
    try world.join(a, uid: 7)
    world.run(for: .seconds(1))
    world.linkUp[a] = false
    world.run(for: .seconds(5))
    world.kick(uid: 7, in: "lobby", banSeconds: 0)  // its KICK BANNED is lost
    world.linkUp[a] = true
    world.run(for: .seconds(20))
    #expect(world.clients[a].lastState == .connectionStateChanged(.failed, .bannedByServer))
    #expect(world.server.sessionCount == 0)
  }

  @Test func aLoginKickedWithoutABanWhileReloggingIn_getsTheKick_andIsNotBackIn() throws {
    var world = LoginWorld()
    let a = world.add(LoginClient(config: LoginConfig(appID: Fixture.appID), seed: 11))
    let alice = Bench.user("alice")
    #expect(world.login(a, token: world.token(for: alice, expiresIn: 3600), user: alice) == nil)
    world.run(for: .seconds(1))
    #expect(world.clients[a].state == .connected)
    world.linkUp[a] = false
    world.run(for: .seconds(5))
    #expect(world.clients[a].state == .reconnecting)
    world.kickUser(alice, banSeconds: 0)  // its KICK BANNED is lost
    world.linkUp[a] = true
    world.run(for: .seconds(20))
    let told = world.clients[a].steps.flatMap(\.notifications)
    #expect(told.last == .connectionStateChanged(.aborted, .bannedByServer))
    #expect(world.clients[a].state == .aborted)
    #expect(world.server.loginSessionCount == 0)
  }

  // MARK: - Where the edge answers it (a scripted device)

  /// The session id a DATA datagram names (bytes 1 ..< 9).
  static func sessionID(_ bytes: [UInt8]) -> UInt64? {
    guard bytes.count >= 9, bytes.first == 0x07 else { return nil }
    return bytes[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
  }

  static func joined(uid: UInt32, host: UInt8, in bench: inout Bench) -> SecureDevice {
    var device = bench.device(.channel(Self.lobby, uid: uid), host: host)
    bench.connect(&device, Bench.channelRequest(uid: uid))
    return device
  }

  /// At the INIT: the resume's proof holds under the ended session's `k_resume`, so the KICK
  /// goes back sealed under its keys (smaller than the INIT), with no RESPONSE.
  @Test func anInitResumingATakenOverSession_getsSameUidUnderItsKeys_andNoResponse() throws {
    var bench = Bench()
    var alice = Self.joined(uid: 5, host: 1, in: &bench)
    let bob = Self.joined(uid: 5, host: 2, in: &bench)
    let ended = alice.sessionID
    alice.address = Bench.address(1, port: 50_000)  // rejoining from a new socket
    let initiation = alice.initiate(Bench.channelRequest(uid: 5), resume: true)
    let answers = bench.sendUnvalidated(initiation, from: alice.address)
    #expect(answers.count == 1)
    #expect(answers.first.map { Self.sessionID($0.bytes) } == ended)
    #expect(
      answers.compactMap { alice.open($0.bytes) }.map { EdgePayloadView(bytes: $0).message }
        == [.kick(.sameUID)])
    #expect(bench.server.counters.handshakesAnswered == 2)  // the two joins' only
    #expect(bench.server.session(cookie: bob.sessionID)?.uid == 5)
    #expect(bench.server.sessionCount == 1)
  }

  /// Without the proof (another holder of a shared token names the session), nothing of
  /// the ended session is sent: the INIT is a new join's.
  @Test func anInitNamingAnEndedSessionWithoutItsProof_getsAResponse() throws {
    var bench = Bench()
    let shared = bench.token(.channel(Self.lobby, uid: 0))
    var alice = SecureDevice(token: shared, address: Bench.address(1))
    bench.connect(&alice, Bench.channelRequest(uid: 5))
    var bob = SecureDevice(token: shared, address: Bench.address(2))
    bench.connect(&bob, Bench.channelRequest(uid: 5))  // takes uid 5 over: alice is kicked
    var mallory = SecureDevice(token: shared, address: Bench.address(9))
    let initiation = mallory.initiate(Bench.channelRequest(), forgingResumeOf: alice.sessionID)
    let answers = bench.sendUnvalidated(initiation, from: mallory.address)
    #expect(answers.count == 1)
    #expect(answers.first?.bytes.first == 0x02)  // a RESPONSE
    #expect(bench.server.counters.noticesRepeated == 0)
  }

  /// At the CONFIRM: the INIT resumed a session still held, which another device took over
  /// before the CONFIRM came. The KICK again, under the ended session's keys; no session.
  @Test func aConfirmResumingASessionTakenOverSinceItsInit_getsSameUid_andNoSession() throws {
    var bench = Bench()
    var alice = Self.joined(uid: 5, host: 1, in: &bench)
    let ended = alice.sessionID
    var old = try #require(alice.data)
    #expect(bench.handshake(&alice, Bench.channelRequest(uid: 5), resume: true))
    let bob = Self.joined(uid: 5, host: 2, in: &bench)
    let answers = bench.send(alice.confirm!.bytes, from: alice.address)
    #expect(answers.count == 1)
    #expect(answers.first.map { Self.sessionID($0.bytes) } == ended)
    var payload: [UInt8] = []
    #expect((try? old.open(answers.first?.bytes[...] ?? [], into: &payload)) != nil)
    #expect(EdgePayloadView(bytes: payload).message == .kick(.sameUID))
    #expect(bench.server.session(cookie: bob.sessionID)?.uid == 5)
    #expect(bench.server.session(cookie: alice.sessionID) == nil)
    #expect(bench.server.sessionCount == 1)
    let keysKept = bench.server.front.holds(alice.sessionID)
    #expect(!keysKept)  // the CONFIRM's keys are dropped
  }

  /// A login taken over by a fresh login elsewhere: a resume without RELOGIN (a rekey's,
  /// whose request is the first LOGIN's) gets KICK REMOTE_LOGIN, and does not take the user
  /// back. (With RELOGIN, rule 7b of §6.1 answers the same.)
  @Test func aLoginResumeOfASessionTakenOver_getsRemoteLogin_andTheUserStaysElsewhere() throws {
    var bench = Bench()
    var alice = bench.device(.user(Bench.user("alice")))
    bench.connect(&alice, Bench.loginRequest("alice"))
    var other = bench.device(.user(Bench.user("alice")), host: 2)
    bench.connect(&other, Bench.loginRequest("alice"))
    let answers = bench.sendUnvalidated(
      alice.initiate(Bench.loginRequest("alice"), resume: true), from: alice.address)
    #expect(
      answers.compactMap { alice.open($0.bytes) }.map { EdgePayloadView(bytes: $0).message }
        == [.kick(.remoteLogin)])
    #expect(bench.server.loginSession(cookie: other.sessionID)?.userID == Bench.user("alice"))
    #expect(bench.server.loginSessionCount == 1)
  }

  /// Past forget-after the ended session is forgotten with its keys: the resume is a new
  /// join's (and takes the uid over, as any join does).
  @Test func pastForgetAfter_aResumeOfAKickedSession_isANewJoin() throws {
    var bench = Bench()
    var alice = Self.joined(uid: 5, host: 1, in: &bench)
    _ = Self.joined(uid: 5, host: 2, in: &bench)
    _ = bench.advance(by: bench.config.forgetAfter + .seconds(2))
    let answers = bench.connect(&alice, Bench.channelRequest(uid: 5), resume: true)
    guard case .accept(let accept)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(!accept.resumed)
  }

  // MARK: - A repeated ACCEPT (§12.6)

  /// A uid-0 token's resume that asks for another uid ends the old session and makes a new
  /// one: ACCEPT not resumed, and so is its repeat.
  @Test func theRepeatOfAnAcceptForAnotherUid_saysNotResumed_asTheFirst() throws {
    var bench = Bench()
    var alice = bench.device(.channel(Self.lobby, uid: 0))
    bench.connect(&alice, Bench.channelRequest())
    let answers = bench.connect(&alice, Bench.channelRequest(uid: 5), resume: true)
    guard case .accept(let first)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(first.uid == 5 && !first.resumed)
    guard case .accept(let again)? = bench.confirm(&alice).first?.message else {
      Issue.record("no repeated ACCEPT")
      return
    }
    #expect(again.uid == 5)
    #expect(again.resumed == first.resumed)
  }

  /// A login resumed before its client showed it had the first LOGIN_ACCEPT is answered as
  /// the first was, RESUMED clear (§6.1 rule 6): and so is the repeat.
  @Test func theRepeatOfALoginAcceptBeforeTheClientConfirmed_saysNotResumed_asTheFirst() throws {
    var bench = Bench()
    var alice = bench.device(.user(Bench.user("alice")))
    bench.connect(&alice, Bench.loginRequest("alice"))
    let answers = bench.connect(&alice, Bench.loginRequest("alice", relogin: true), resume: true)
    guard case .loginAccept(let first)? = answers.first?.message else {
      Issue.record("\(answers.map(\.bytes))")
      return
    }
    #expect(!first.resumed)
    guard case .loginAccept(let again)? = bench.confirm(&alice).first?.message else {
      Issue.record("no repeated LOGIN_ACCEPT")
      return
    }
    #expect(again.session == first.session)
    #expect(again.resumed == first.resumed)
  }
}
