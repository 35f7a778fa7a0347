// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// Seeded random sequences of calls, server messages (well-formed with the right cookie,
/// with another cookie, garbage and mutated bytes) and clock advances (on time, and late
/// wake-ups that jump several deadlines), checked after every step against
/// ``LoginInvariants`` and against a model server that numbers member events and drops,
/// duplicates and reorders its batches: the session must report exactly the server's events,
/// in order, each once. A failure names its seed and step; the seed replays it.
@Suite struct LoginPropertyTests {
  static let chunks = 16
  static let sequencesPerChunk = 128
  static let steps = 120

  @Test(arguments: 0..<chunks)
  func randomSequences_keepEveryInvariant(chunk: Int) {
    var totals = LoginPropertyRun.Totals()
    for index in 0..<Self.sequencesPerChunk {
      let seed = UInt64(chunk * Self.sequencesPerChunk + index + 1)
      var run = LoginPropertyRun(seed: seed)
      for step in 0..<Self.steps {
        let violations = run.step()
        if !violations.isEmpty {
          Issue.record("seed \(seed) step \(step) (\(run.lastEvent)): \(violations)")
          return
        }
      }
      totals.add(run)
    }
    // The sequences reach what the invariants are about (not a vacuous pass).
    #expect(totals.states.count == LoginState.allCases.count, "\(totals.states)")
    #expect(totals.reasons.count == LoginChangeReason.allCases.count, "\(totals.reasons)")
    #expect(totals.loginErrors == [nil, .tooOften, .invalidArgument, .alreadyLoggedIn])
    #expect(
      totals.channelErrors == [
        0, TetherError.notReady.rawValue, TetherError.joinChannelRejected.rawValue,
      ])
    #expect(totals.loginResults > 100 && totals.memberEvents > 100 && totals.batches > 100)
    #expect(totals.leftReconnecting > 10 && totals.lateWakeUps > 100 && totals.gaps > 10)
  }
}

/// One random sequence against one session and a model server.
struct LoginPropertyRun {
  var random: SeededRandom
  var session: LoginSession<SeededRandom>
  var config: LoginConfig
  var now = Instant(nanoseconds: 1_000_000_000)
  var output = LoginOutput()
  var invariants = LoginInvariants()
  var server = ModelServer()
  var lastEvent = ""
  var states: Set<LoginState> = []
  var reasons: Set<LoginChangeReason> = []
  var batches = 0
  var lateWakeUps = 0
  var leftReconnecting = 0
  /// The two latest login calls not refused as too often.
  var loginCalls: [Instant] = []
  var loginErrors: Set<TetherError?> = []
  var channelErrors: Set<Int32> = []

  static let channels = (0..<20).map { try! ChannelName(validating: Array("room-\($0)".utf8)) }
  static let users = ["bob", "carol", "dave"].map { try! UserID(validating: Array($0.utf8)) }
  /// The longest names there are: the largest LOGIN must still fit a datagram.
  static let longToken = try! Token(validating: Array(repeating: UInt8(ascii: "t"), count: 512))
  static let longUser = try! UserID(validating: Array(repeating: UInt8(ascii: "u"), count: 64))
  static let longApp = try! AppID(validating: Array(repeating: UInt8(ascii: "a"), count: 64))

  init(seed: UInt64) {
    random = SeededRandom(seed: seed ^ 0x5EED)
    config = LoginConfig(appID: seed % 4 == 0 ? Self.longApp : Fixture.appID)
    if seed % 2 == 0 {
      // Short thresholds: deadlines collide with packets and calls more often.
      config.loginTimeout = .ms(600)
      config.interruptedAfter = .ms(400)
      config.heartbeatInterval = .ms(100)
      config.retry = RetryPolicy(base: .ms(40), cap: .ms(300))
    }
    session = try! LoginSession(config: config, random: SeededRandom(seed: seed))
  }

  func chance(_ percent: UInt64, _ r: UInt64) -> Bool { r % 100 < percent }

  mutating func int(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }

  /// One random event, then the checks.
  mutating func step() -> [String] {
    let before = session.state
    output.removeAll()
    let kind: LoginInvariants.Step
    var extra: [String] = []
    let scale = config.heartbeatInterval.nanoseconds / 1_000_000
    switch int(100) {
    case 0..<7:
      (kind, extra) = login()
    case 7..<10:
      lastEvent = "logout"
      let loggedIn = session.state != .disconnected
      do throws(TetherError) {
        try session.logout(now: now, into: &output)
        kind = .logout(succeeded: true)
      } catch {
        kind = .logout(succeeded: false)
        if error != .notLoggedIn { extra.append("logout threw \(error)") }
      }
      if case .logout(let succeeded) = kind, succeeded != loggedIn {
        extra.append("logout \(succeeded ? "succeeded" : "failed") while \(before.name)")
      }
    case 10..<17:
      let channel = Self.channels[int(Self.channels.count)]
      let join = int(3) != 0
      lastEvent = join ? "join" : "leave"
      // The call rules: only while (logging) in and under 32 unacknowledged operations; a
      // join of a channel it is in, or a 17th, is rejected; a leave needs the channel.
      let open =
        (before == .connecting || before == .connected || before == .reconnecting)
        && session.pendingChannelOperations < 32
      let isIn = session.joinedChannels.contains(channel)
      let expected: TetherError?
      if join {
        expected =
          !open
          ? .notReady : isIn || session.joinedChannels.count >= 16 ? .joinChannelRejected : nil
        extra = Self.compare(
          "join", expected,
          { () throws(TetherError) in
            try session.joinChannel(channel, now: now, into: &output)
          })
      } else {
        expected = !open || !isIn ? .notReady : nil
        extra = Self.compare(
          "leave", expected,
          { () throws(TetherError) in
            try session.leaveChannel(channel, now: now, into: &output)
          })
      }
      channelErrors.insert(expected?.rawValue ?? 0)
      kind = .call
    case 17..<20:
      lastEvent = "renew"
      let token = int(2) == 0 ? Fixture.token2 : Self.longToken
      let expected: TetherError? =
        before == .disconnected || before == .aborted ? .notReady : nil
      extra = Self.compare(
        "renew", expected,
        { () throws(TetherError) in
          try session.renewToken(token, now: now, into: &output)
        })
      kind = .call
    case 20..<23:
      lastEvent = "network changed"
      session.networkChanged(now: now, into: &output)
      kind = .call
    case 23..<45:
      return advance(by: .ms(UInt64(int(Int(scale) * 12)) + 1))
    case 45..<50:
      lastEvent = "late wake-up"
      lateWakeUps += 1
      now = now + .ms(UInt64(int(Int(scale) * 30)) + 1)
      session.advance(to: now, into: &output)
      kind = .advance
    case 50..<75:
      let message = serverMessage()
      let bytes = Packet(cookie: server.cookie, message: message).encoded
      (kind, extra) = deliver(bytes)
    case 75..<85:
      (kind, extra) = memberEventsBatch()
    case 85..<90:
      let message = serverMessage()
      let bytes = Packet(cookie: server.cookie ^ (random.next() | 1), message: message).encoded
      (kind, extra) = deliver(bytes)
      if !output.actions.isEmpty { extra.append("a packet with another cookie did something") }
    default:
      // Garbage: random bytes, or a valid packet with one byte changed.
      var bytes = Packet(cookie: server.cookie, message: serverMessage()).encoded
      if int(2) == 0 {
        bytes = (0..<int(40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      } else {
        bytes[int(bytes.count)] ^= UInt8(truncatingIfNeeded: random.next() | 1)
      }
      (kind, extra) = deliver(bytes)
    }
    return check(before: before, kind) + extra
  }

  /// Runs `call` and says how its outcome differs from `expected` (nil: success).
  static func compare(
    _ name: String, _ expected: TetherError?, _ call: () throws(TetherError) -> Void
  ) -> [String] {
    var returned: TetherError?
    do throws(TetherError) { try call() } catch { returned = error }
    return returned == expected
      ? []
      : ["\(name) returned \(String(describing: returned)), not \(String(describing: expected))"]
  }

  /// A login call, its return checked against the rules of docs/BEHAVIOUR.md §2.4: TOO_OFTEN when
  /// two calls not refused as too often came within the last second, else INVALID_ARGUMENT
  /// for a missing token or user id, else ALREADY_LOGIN unless DISCONNECTED.
  mutating func login() -> (LoginInvariants.Step, [String]) {
    lastEvent = "login"
    let r = random.next()
    let token: Token? = r % 10 == 0 ? nil : (r % 3 == 0 ? Self.longToken : Fixture.token)
    let user: UserID? = r % 13 == 0 ? nil : (r % 5 == 0 ? Self.longUser : LoginHarness.user)
    let tooOften = loginCalls.filter { now.since($0) < .seconds(1) }.count >= 2
    let expected: TetherError? =
      tooOften
      ? .tooOften
      : token == nil || user == nil
        ? .invalidArgument : session.state != .disconnected ? .alreadyLoggedIn : nil
    if !tooOften { loginCalls = Array((loginCalls + [now]).suffix(2)) }
    var returned: TetherError?
    do throws(TetherError) {
      try session.login(token: token, userID: user, now: now, into: &output)
    } catch {
      returned = error
    }
    let extra =
      returned == expected
      ? [] : ["login returned \(String(describing: returned)), not \(String(describing: expected))"]
    loginErrors.insert(returned)
    guard returned == nil else { return (.login(started: false), extra) }
    server.newLogin()
    return (.login(started: true), extra)
  }

  /// Moves the clock by `interval`, firing each deadline at its instant (a punctual driver),
  /// checking after each firing.
  mutating func advance(by interval: Interval) -> [String] {
    lastEvent = "advance \(interval.nanoseconds / 1_000_000) ms"
    let target = now + interval
    var firings = 0
    while let due = session.nextDeadline, due <= target {
      firings += 1
      if firings > 10_000 { return ["deadlines do not move forward"] }
      let before = session.state
      now = due
      output.removeAll()
      session.advance(to: now, into: &output)
      var violations = check(before: before, .advance)
      if violations.isEmpty { violations = answer() }
      if !violations.isEmpty { return violations }
    }
    now = target
    return []
  }

  /// The model server answers most of what the session just sent at once (a live link:
  /// heartbeats acknowledged, LOGINs accepted now and then), each answer a checked step.
  mutating func answer() -> [String] {
    var replies: [Message] = []
    for datagram in output.datagrams {
      guard let packet = try? Packet.decode(datagram) else { continue }
      switch packet.message {
      case .loginHeartbeat(let sequence, _, _) where int(10) < 8:
        replies.append(.heartbeatAck(sequence: sequence, serverTimeMs: 0))
      case .login where int(10) < 3:
        let resumed = server.acceptedBefore && int(2) == 0
        replies.append(
          .loginAccept(
            LoginAccept(
              serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: resumed,
              session: server.sessionOfAccept(resumed: resumed))))
      default: break
      }
    }
    for reply in replies {
      let before = session.state
      output.removeAll()
      let (kind, extra) = deliver(Packet(cookie: server.cookie, message: reply).encoded)
      let violations = check(before: before, kind) + extra
      if !violations.isEmpty { return violations }
    }
    return []
  }

  /// Hands `bytes` to the session, learning the cookie from what it sent.
  mutating func deliver(_ bytes: [UInt8]) -> (LoginInvariants.Step, [String]) {
    lastEvent = "datagram"
    let decoded = try? Packet.decode(bytes[...])
    let error = session.receive(datagram: bytes[...], now: now, into: &output)
    var extra: [String] = []
    if (error == nil) != (decoded != nil) { extra.append("receive and decode disagree") }
    let own = decoded.flatMap { $0.cookie == server.cookie && server.cookie != 0 ? $0 : nil }
    if let own { lastEvent = "recv " + String(String(describing: own.message).prefix(60)) }
    return (.datagram(own?.message), extra)
  }

  /// A MEMBER_EVENTS batch from the model server: what the session asked for, an old one
  /// again, or a later one (the earlier lost or overtaken). The session must report exactly
  /// the server's events that come next in its numbering.
  mutating func memberEventsBatch() -> (LoginInvariants.Step, [String]) {
    if server.events.count < 200 {
      for _ in 0..<int(4) {
        server.events.append(
          MemberEvent.Entry(
            kind: int(2) == 0 ? .joined : .left, channel: Self.channels[int(4)],
            userID: Self.users[int(Self.users.count)]))
      }
    }
    guard !server.events.isEmpty else { return (.advance, []) }
    let first: Int
    switch int(4) {
    case 0, 1: first = min(server.acknowledged, server.events.count - 1)  // what it asked for
    case 2: first = max(0, server.events.count - 1 - int(4))  // the latest: maybe past a gap
    default: first = int(server.events.count)  // anything: a repeat, or overtaken
    }
    let count = min(1 + int(6), server.events.count - first)
    let batch = try! MemberEvents(
      session: server.session, firstSequence: UInt32(first + 1),
      entries: Array(server.events[first..<first + count]))
    batches += 1
    let wasConnected = session.state == .connected
    let delivered = server.delivered
    var (kind, extra) = deliver(
      Packet(cookie: server.cookie, message: .memberEvents(batch)).encoded)
    // The model: entries up to `delivered` are repeats; if the batch reaches the next one,
    // everything after it in the batch comes out, in order.
    let reaches = first <= delivered && first + count > delivered
    let expected = wasConnected && reaches ? Array(server.events[delivered..<first + count]) : []
    let got: [MemberEvent.Entry] = output.notifications.compactMap {
      switch $0 {
      case .memberJoined(let c, let u):
        MemberEvent.Entry(
          kind: .joined, channel: try! ChannelName(validating: Array(c)),
          userID: try! UserID(validating: Array(u)))
      case .memberLeft(let c, let u):
        MemberEvent.Entry(
          kind: .left, channel: try! ChannelName(validating: Array(c)),
          userID: try! UserID(validating: Array(u)))
      default: nil
      }
    }
    if got != expected {
      extra.append("member events \(got.count) reported, \(expected.count) expected")
    }
    server.delivered += got.count
    if case .datagram(nil) = kind { kind = .advance }
    return (kind, extra)
  }

  /// A server message with this login's cookie: every type a login session can receive.
  mutating func serverMessage() -> Message {
    switch int(14) {
    case 0, 1:
      let resumed = server.acceptedBefore && int(3) != 0
      return .loginAccept(
        LoginAccept(
          serverTimeMs: random.next(),
          tokenTimeLeftMs: [0, 1, 500, 3_000, 60_000][int(5)],
          resumed: resumed, session: server.sessionOfAccept(resumed: resumed)))
    case 2: return .loginRefuse(code: [1, 2, 4, 5, 6, 7, 9, 255][int(8)])
    case 3, 4: return .heartbeatAck(sequence: UInt32(int(100)), serverTimeMs: 0)
    case 5: return .channelAck(session: server.session, sequence: UInt32(int(40)))
    case 6: return .kick([KickReason.banned, .remoteLogin, .sameUID][int(3)])
    case 7: return .tokenExpired
    case 8: return .sessionUnknown
    case 9:
      return .tokenRenewed(
        TokenRenewal(refused: int(2) == 0 ? nil : .invalidToken, tokenTimeLeftMs: 60_000))
    case 10: return .accept(JoinAccept(uid: 1, serverTimeMs: 0, tokenTimeLeftMs: 0, resumed: false))
    case 11: return .presence(try! PresenceDigest([]))
    case 12: return .heartbeat(sequence: 1)
    default:
      return .login(
        LoginRequest(
          appID: Fixture.appID, userID: LoginHarness.user, token: Fixture.token, isRelogin: false))
    }
  }

  mutating func check(before: LoginState, _ kind: LoginInvariants.Step) -> [String] {
    for action in output.actions {
      switch action {
      case .send(let datagram):
        guard let packet = try? Packet.decode(output.bytes(of: datagram)) else { continue }
        server.heard(packet)
      case .notify(.connectionStateChanged(let state, let reason)):
        states.insert(state)
        reasons.insert(reason)
      case .notify: break
      }
    }
    if before == .reconnecting && session.state != .reconnecting { leftReconnecting += 1 }
    if case .datagram(.loginAccept(let accept)) = kind, before != .disconnected,
      before != .aborted
    {
      server.accepted(resumed: accept.resumed, session: accept.session)
    }
    return invariants.check(session, before: before, step: kind, output: output, now: now)
  }

  struct Totals {
    var states: Set<LoginState> = []
    var reasons: Set<LoginChangeReason> = []
    var loginErrors: Set<TetherError?> = []
    var channelErrors: Set<Int32> = []
    var loginResults = 0
    var memberEvents = 0
    var batches = 0
    var lateWakeUps = 0
    var leftReconnecting = 0
    /// Batches the session left for the server to resend (they started past a gap).
    var gaps: UInt64 = 0

    mutating func add(_ run: LoginPropertyRun) {
      states.formUnion(run.states)
      reasons.formUnion(run.reasons)
      loginErrors.formUnion(run.loginErrors)
      channelErrors.formUnion(run.channelErrors)
      loginResults += run.invariants.loginResults
      memberEvents += run.invariants.memberEvents
      batches += run.batches
      lateWakeUps += run.lateWakeUps
      leftReconnecting += run.leftReconnecting
      gaps += run.session.counters.eventsOutOfOrder
    }
  }
}

/// The server's side of one login, as far as member events go: its events numbered from 1
/// in each server session, how far the client said it got (its heartbeats), and how many
/// the client reported.
struct ModelServer {
  var cookie: UInt64 = 0
  var acceptedBefore = false
  /// The current server session's number (LoginAccept.session).
  var session: UInt32 = 0
  var events: [MemberEvent.Entry] = []
  /// What the client's latest heartbeat said it has.
  var acknowledged = 0
  /// What the session reported in this server session.
  var delivered = 0

  mutating func newLogin() {
    cookie = 0
    acceptedBefore = false
    restart()
  }

  mutating func restart() {
    events.removeAll()
    acknowledged = 0
    delivered = 0
  }

  mutating func heard(_ packet: Packet) {
    switch packet.message {
    case .login: cookie = packet.cookie
    case .loginHeartbeat(_, let session, let received) where session == self.session:
      acknowledged = Int(received)
    default: break
    }
  }

  /// The number a LOGIN_ACCEPT carries: the current session's when resuming, a new one's
  /// otherwise.
  func sessionOfAccept(resumed: Bool) -> UInt32 { resumed ? session : session &+ 1 }

  /// A LOGIN_ACCEPT the session took: a new server session unless resumed.
  mutating func accepted(resumed: Bool, session: UInt32) {
    acceptedBefore = true
    if !resumed || session != self.session { restart() }
    self.session = session
  }
}
