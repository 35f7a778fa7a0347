// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherCore
import TetherEdge
import TetherLab
import TetherSodium

/// Which profile an attack scenario runs: the channel engine (examples/device) or the login
/// client (examples/messaging), with the lines each prints for the same events.
enum AttackProfile: String, Sendable, CaseIterable, CustomStringConvertible {
  case channel, login

  var description: String { rawValue }

  var connecting: String { self == .channel ? "CONNECTING CONNECTING" : "CONNECTING LOGIN" }
  var joined: String { self == .channel ? "CONNECTED JOIN_SUCCESS" : "CONNECTED LOGIN_SUCCESS" }
  /// The line a host prints at each retry of its join or login.
  var attempt: String { self == .channel ? "join-attempt" : "login-attempt" }
  /// How the two members are named: a uid (channel) or a user id (login), each chosen so
  /// that its every encoding is long enough not to turn up in random bytes by chance.
  var members: [String] {
    self == .channel ? ["3237998081", "3237998082"] : ["alice-attacked-7", "bob-attacked-7"]
  }

  /// What a peer prints when member `name` joins, and when it leaves (any reason).
  func peerSawJoin(_ name: String) -> String {
    self == .channel
      ? "user-joined uid=\(name)" : "member-joined channel=\(Lab.channel) user=\(name)"
  }
  func peerSawLeave(_ name: String) -> String {
    self == .channel
      ? "user-offline uid=\(name)" : "member-left channel=\(Lab.channel) user=\(name)"
  }
}

/// One attack scenario's world, as ``FaultWorld`` makes one (an edge, a fault proxy, a seed
/// from TETHER_FAULT_SEED or drawn, a time scale), with an ``Attacker`` on the proxy, and
/// the passive tap's list of everything that must never cross the wire (names, uids,
/// tokens, device secrets), filled as hosts start. Its edge may take more options
/// (`--handshake-rate`, to draw COOKIE_REPLYs).
final class AttackWorld: @unchecked Sendable {
  let test: String
  let seed: UInt64
  let scale: Double
  let edge: EdgeProcess
  let proxy: FaultProxy
  let attacker: Attacker
  let profile: AttackProfile
  private(set) var tap = PassiveTap()
  /// Every host's token text, by name.
  private(set) var tokens: [String: String] = [:]

  private init(
    _ test: String, _ profile: AttackProfile, scale: Double = 0.1, devices: Int = 2,
    edgeArguments: [String] = []
  ) throws {
    self.test = "\(test)(\(profile))"
    self.profile = profile
    self.scale = scale
    seed = FaultWorld.seed()
    edge = try EdgeProcess(binary: Lab.edge, timeScale: scale, extraArguments: edgeArguments)
    proxy = try FaultProxy(devices: devices, edgePort: edge.port, seed: seed)
    attacker = Attacker(proxy: proxy, edgePort: edge.port, devices: devices, seed: seed)
    tap.text("app id", edge.appID)
    tap.text("app certificate", edge.certificate)
    tap.text("channel name", Lab.channel)
    print("attack seed \(seed): \(self.test)")
  }

  /// At most this many scenarios at once: each runs an edge and two to four C hosts, and
  /// the machine has two cores; the scenarios mostly wait, so a few share them well, and
  /// all of them at once starve one another past their thresholds.
  static let gate = Gate(width: 5)

  /// A world once a place is free at ``gate`` (given back when the world goes away).
  static func make(
    _ test: String, _ profile: AttackProfile, scale: Double = 0.1, devices: Int = 2,
    edgeArguments: [String] = []
  ) async throws -> AttackWorld {
    await gate.enter()
    do {
      return try AttackWorld(
        test, profile, scale: scale, devices: devices, edgeArguments: edgeArguments)
    } catch {
      gate.leave()
      throw error
    }
  }

  deinit {
    finish()
    Self.gate.leave()
  }

  /// Said by every expectation of the scenario, so a failure names its seed.
  var replay: Comment {
    "seed \(seed); replay: TETHER_FAULT_SEED=\(seed) swift test --filter \(test)"
  }
  var heartbeat: Double { 1 * scale }

  /// Kills the edge (SIGKILL) and starts a new one on the same port with the same options
  /// (so the same default `--edge-id`); when it was listening again.
  @discardableResult
  func restartEdge() throws -> Double {
    let port = edge.port
    edge.kill()
    try edge.start(port: port)
    return monotonicSeconds()
  }

  /// ``restartEdge()``, then waits until `a` and `b` print CONNECTED again (each expected);
  /// when the new edge was listening.
  @discardableResult
  func restartEdgeAndRejoin(
    _ a: any HostProcess, _ b: any HostProcess, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Double {
    let marks = (a.lines.count, b.lines.count)
    let back = try restartEdge()
    #expect(
      await a.arrives("state CONNECTED", from: marks.0) != nil, "\(text(a)); \(replay)",
      sourceLocation: sourceLocation)
    #expect(
      await b.arrives("state CONNECTED", from: marks.1) != nil, "\(text(b)); \(replay)",
      sourceLocation: sourceLocation)
    return back
  }

  /// The states of a host that joined, met one edge restart and left: joined first; across
  /// the restart RECONNECTING (a RESET's, or INTERRUPTED if the restart was slow) and back to
  /// CONNECTED (more than one round of it only if the restart took that long); then the
  /// leave.
  func expectJoinedRejoinedLeft(
    _ states: [String], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      states.prefix(2) == [profile.connecting, profile.joined], "\(states); \(replay)",
      sourceLocation: sourceLocation)
    let restart = states.dropFirst(2).dropLast()
    #expect(
      restart.first?.hasPrefix("RECONNECTING") == true, "\(states); \(replay)",
      sourceLocation: sourceLocation)
    #expect(
      restart.last?.hasPrefix("CONNECTED") == true, "\(states); \(replay)",
      sourceLocation: sourceLocation)
    #expect(
      states.last?.hasPrefix("DISCONNECTED") == true, "\(states); \(replay)",
      sourceLocation: sourceLocation)
  }

  /// A host of the profile through proxy link `index`, named `name`, as member
  /// `profile.members[member]`; with `token`, that text instead of a token for it.
  func host(
    _ name: String, index: Int, member: Int, token: String? = nil, appID: String? = nil,
    expireSeconds: Int = 3600, extra: [String] = []
  ) throws -> any HostProcess {
    let id = profile.members[member]
    let text = try token ?? self.token(member: member, expireSeconds: expireSeconds)
    note(token: text, of: name)
    switch profile {
    case .channel:
      let uid = UInt32(id) ?? 0
      tap.uid(uid)
      return try Lab.device(
        name, edge: edge, relay: proxy, index: index, uid: uid, token: text,
        appID: appID, scale: scale, extra: extra)
    case .login:
      tap.text("user id", id)
      return try Lab.messaging(
        name, edge: edge, relay: proxy, index: index, user: id, token: text,
        appID: appID, scale: scale, extra: extra)
    }
  }

  /// A token for member `member` from the edge's own `tether-edge token`.
  func token(member: Int, expireSeconds: Int = 3600) throws -> String {
    let id = profile.members[member]
    switch profile {
    case .channel:
      return try edge.token(
        channel: Lab.channel, uid: UInt32(id) ?? 0, expireSeconds: expireSeconds)
    case .login: return try edge.token(userID: id, expireSeconds: expireSeconds)
    }
  }

  /// A well-formed token of another certificate: the edge cannot open it (REFUSE_CLEAR).
  func foreignToken(member: Int) throws -> String {
    let minter = try TokenMinter(certificate: Array("another-certificate".utf8))
    let id = profile.members[member]
    let grant: TokenGrant =
      switch profile {
      case .channel: .channel(try ChannelName(validating: Lab.channel.utf8), uid: UInt32(id) ?? 0)
      case .login: .user(try UserID(validating: id.utf8))
      }
    return minter.mint(
      appID: try AppID(validating: edge.appID.utf8), grant: grant, expiresAt: 0)
  }

  /// The tap learns `token`'s text and, when it is a version 2 token, its device secret.
  func note(token: String, of name: String) {
    tokens[name] = token
    tap.text("token text of \(name)", token)
    if let parsed = try? TokenV2(text: Array(token.utf8)[...], crypto: SodiumCrypto()) {
      tap.bytes("device secret of \(name)", parsed.deviceSecret)
    }
  }

  /// Two members of the profile: B (link 1, member 1) then A (link 0, member 0), B having
  /// seen A join (a login host hears of the members that join after it; a channel
  /// device of those already there too, so A has seen B as well).
  func twoMembers(extraA: [String] = []) async throws -> (a: any HostProcess, b: any HostProcess) {
    let b = try host("B", index: 1, member: 1)
    #expect(await b.arrives("state \(profile.joined)") != nil, replay)
    let a = try host("A", index: 0, member: 0, extra: extraA)
    #expect(await a.arrives("state \(profile.joined)") != nil, replay)
    let bSawA = await b.arrives(profile.peerSawJoin(profile.members[0])) != nil
    var aSawB = true
    if profile == .channel {
      aSawB = await a.arrives(profile.peerSawJoin(profile.members[1])) != nil
    }
    #expect(bSawA && aSawB, "A: \(text(a)); B: \(text(b)); \(replay)")
    return (a, b)
  }

  /// INITs a holder of `token` (member `member`'s) builds with the project's handshake
  /// types, as its device would: a new ephemeral key and nonce each.
  func tokenHolderInits(token: String, member: Int, count: Int) throws -> [[UInt8]] {
    let crypto = SodiumCrypto()
    let parsed = try TokenV2(text: Array(token.utf8)[...], crypto: crypto)
    let id = profile.members[member]
    let request =
      profile == .channel
      ? HandshakeRequest(
        uid: UInt32(id) ?? 0, appID: Array(edge.appID.utf8),
        kind: HandshakeRequest.channelKind, name: Array(Lab.channel.utf8))
      : HandshakeRequest(
        appID: Array(edge.appID.utf8), kind: HandshakeRequest.loginKind,
        name: Array(id.utf8))
    var handshake = DeviceHandshake(crypto: crypto)
    return try (0..<count).map { _ in try handshake.initiate(token: parsed, request: request).bytes
    }
  }

  // MARK: - Checks

  /// The passive tap: none of the secrets in any datagram, either way, genuine or sent by
  /// the attacker or answered to its sockets.
  func expectTapClean(sourceLocation: SourceLocation = #_sourceLocation) {
    let records = attacker.records
    let findings = tap.findings(in: records)
    #expect(findings == [], "\(records.count) datagrams; \(replay)", sourceLocation: sourceLocation)
    #expect(records.count > 10, replay, sourceLocation: sourceLocation)
  }

  /// The lines `host` printed after line `from` (none expected: no callback, no state).
  func linesSince(_ host: any HostProcess, _ from: Int) -> [String] {
    host.lines.dropFirst(from).map(\.text)
  }

  /// Where each host's lines stood (line count, and its proxy link) at a moment.
  struct Mark {
    let time: Double
    let hosts: [(host: any HostProcess, lines: Int, link: Int)]
  }

  /// Marks `hosts` (each with its proxy link) now.
  func mark(_ hosts: [(any HostProcess, Int)]) -> Mark {
    Mark(time: monotonicSeconds(), hosts: hosts.map { ($0.0, $0.0.lines.count, $0.1) })
  }

  /// No host of `mark` printed anything since: no state change, no callback. Unless the
  /// machine starved a host or the edge first (``starved(_:before:)``): then a
  /// silence of interrupted_after was the machine's, the rules make the hosts report it, and
  /// the run says so instead of judging the attacker by it (as FaultEndToEndTests does).
  func expectNoLines(
    since mark: Mark, _ what: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let printed = mark.hosts.map { Array($0.host.lines.dropFirst($0.lines)) }
    guard let first = printed.flatMap({ $0 }).map(\.time).min() else { return }
    if let starvation = starved(mark, before: first) {
      print("\(test): STARVED, not judged: \(starvation); lines: \(printed.map { $0.map(\.text) })")
      return
    }
    for (index, lines) in printed.enumerated() {
      #expect(
        lines.map(\.text) == [], "\(mark.hosts[index].host.process.name); \(what ?? replay)",
        sourceLocation: sourceLocation)
    }
  }

  /// Whether, between `mark` and `time`, the machine rather than the attacker stopped the
  /// traffic: a device sent no DATA for 2.5 heartbeats (its process did not run: the
  /// attacker never stops a device sending), or every marked link went as long without
  /// DATA from the edge (the edge did not run; an attack on one session's keys would
  /// silence that link alone). What it found, or nil.
  func starved(_ mark: Mark, before time: Double) -> String? {
    let limit = 2.5 * heartbeat
    func longestGap(_ link: Int, _ direction: FaultDirection) -> Double {
      let times = attacker.genuine(link).filter {
        $0.kind == 0x07 && $0.direction == direction && $0.time > mark.time && $0.time < time
      }.map(\.time)
      let points = [mark.time] + times + [time]
      return zip(points, points.dropFirst()).map { $1 - $0 }.max() ?? 0
    }
    for entry in mark.hosts {
      let gap = longestGap(entry.link, .uplink)
      if gap > limit { return "link \(entry.link) sent nothing for \(ms(gap))" }
    }
    let edgeGaps = mark.hosts.map { longestGap($0.link, .downlink) }
    if edgeGaps.allSatisfy({ $0 > limit }) {
      return "the edge sent no link anything for \(edgeGaps.map { ms($0) })"
    }
    return nil
  }

  /// Link 0's session moved to the attacker's relaying socket `socket` after `rebound`: the
  /// edge sent the new port more than five datagrams and the old port nothing for the last
  /// five heartbeats, and until the move never sent the new port more than it received
  /// there (``Attacker/excess(socket:until:sessionOnly:)``). When it moved (the old port's
  /// last datagram), and what the old port heard after `rebound`.
  @discardableResult
  func expectMoved(
    socket: Int, since rebound: Double, sessionOnly: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> (moved: Double, oldPath: [AttackRecord]) {
    let traffic = attacker.traffic(socket: socket)
    let oldPath = attacker.genuine(0).filter { $0.direction == .downlink && $0.time > rebound }
    let moved = oldPath.last?.time ?? rebound
    #expect(
      traffic.fromEdge.count > 5, "the session did not move: \(traffic); \(replay)",
      sourceLocation: sourceLocation)
    #expect(
      monotonicSeconds() - moved > 5 * heartbeat, "the old port still hears the edge; \(replay)",
      sourceLocation: sourceLocation)
    #expect(
      attacker.excess(socket: socket, until: moved) <= 0, "\(traffic); \(replay)",
      sourceLocation: sourceLocation)
    if sessionOnly {
      #expect(
        attacker.excess(socket: socket, until: moved, sessionOnly: true) <= 0,
        "\(traffic); \(replay)", sourceLocation: sourceLocation)
    }
    return (moved, oldPath)
  }

  /// `a` (member 0) leaves and `b` sees it leave (channel: reason QUIT), then `b` leaves.
  func expectLeaveSeen(
    _ a: any HostProcess, by b: any HostProcess,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async {
    let left = b.lines.count
    #expect(leave(a) == 0, replay, sourceLocation: sourceLocation)
    let reason = profile == .channel ? " reason=QUIT" : ""
    #expect(
      await b.arrives(profile.peerSawLeave(profile.members[0]) + reason, from: left) != nil,
      "\(text(b)); \(replay)", sourceLocation: sourceLocation)
    #expect(leave(b) == 0, replay, sourceLocation: sourceLocation)
  }

  /// Every line `host` printed, for a failure's message.
  func text(_ host: any HostProcess) -> [String] { host.lines.map(\.text) }

  /// Stops the attacker, the proxy and the edge.
  func finish() {
    attacker.stop()
    proxy.stop()
    edge.stop()
  }

  /// Leaves (channel) or logs out (login) by SIGINT, and waits for the exit.
  func leave(_ host: any HostProcess) -> Int32? {
    (host as? DeviceProcess)?.leave() ?? (host as? MessagingProcess)?.logout()
  }
}

/// Sleeps without holding a thread of the test runner's pool (it has one a core), so the
/// other scenarios run meanwhile.
func pause(_ seconds: Double) async throws {
  try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
}

extension HostProcess {
  /// The first line containing `text` after line `from`, waiting up to `timeout` seconds
  /// without holding a thread of the test runner's pool.
  func arrives(_ text: String, from: Int = 0, timeout: Double = 10) async -> ManagedProcess.Line? {
    let end = monotonicSeconds() + timeout
    while monotonicSeconds() < end {
      if let line = first(text, from: from) { return line }
      try? await Task.sleep(nanoseconds: 5_000_000)
    }
    // Once more: a task resumed late (the pool busy) must not miss a line that came in time.
    return first(text, from: from)
  }
}

/// A counting semaphore for async tests: ``enter()`` waits, without holding a thread, until
/// one of `width` places is free; ``leave()`` frees one.
final class Gate: @unchecked Sendable {
  private let lock = NSLock()
  private var free: Int
  private var waiting: [CheckedContinuation<Void, Never>] = []

  init(width: Int) { free = width }

  func enter() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now: Bool = lock.withLock {
        guard free > 0 else {
          waiting.append(continuation)
          return false
        }
        free -= 1
        return true
      }
      if now { continuation.resume() }
    }
  }

  func leave() {
    let next: CheckedContinuation<Void, Never>? = lock.withLock {
      guard !waiting.isEmpty else {
        free += 1
        return nil
      }
      return waiting.removeFirst()
    }
    next?.resume()
  }
}
