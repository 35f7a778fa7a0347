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

/// One attack scenario's world: a ``FaultWorld`` (an edge, a fault proxy, a seed, a time
/// scale) with an ``Attacker`` on the proxy, and the passive tap's list of everything that
/// must never cross the wire (names, uids, tokens, device secrets), filled as hosts start.
final class AttackWorld: @unchecked Sendable {
  let world: FaultWorld
  let attacker: Attacker
  let profile: AttackProfile
  private(set) var tap = PassiveTap()
  /// Every host's token text, by name.
  private(set) var tokens: [String: String] = [:]

  init(_ test: String, _ profile: AttackProfile, scale: Double = 0.05, devices: Int = 2) throws {
    self.profile = profile
    world = try FaultWorld("\(test)(\(profile))", scale: scale, devices: devices)
    attacker = Attacker(
      proxy: world.proxy, edgePort: world.edge.port, devices: devices, seed: world.seed)
    tap.text("app id", world.edge.appID)
    tap.text("app certificate", world.edge.certificate)
    tap.text("channel name", Lab.channel)
  }

  var replay: Comment { world.replay }
  var scale: Double { world.scale }
  var heartbeat: Double { world.heartbeat }

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
        name, edge: world.edge, relay: world.proxy, index: index, uid: uid, token: text,
        appID: appID, scale: scale, extra: extra)
    case .login:
      tap.text("user id", id)
      return try Lab.messaging(
        name, edge: world.edge, relay: world.proxy, index: index, user: id, token: text,
        appID: appID, scale: scale, extra: extra)
    }
  }

  /// A token for member `member` from the edge's own `tether-edge token`.
  func token(member: Int, expireSeconds: Int = 3600) throws -> String {
    let id = profile.members[member]
    switch profile {
    case .channel:
      return try world.edge.token(
        channel: Lab.channel, uid: UInt32(id) ?? 0, expireSeconds: expireSeconds)
    case .login: return try world.edge.token(userID: id, expireSeconds: expireSeconds)
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
      appID: try AppID(validating: world.edge.appID.utf8), grant: grant, expiresAt: 0)
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
  func twoMembers(extraA: [String] = []) throws -> (a: any HostProcess, b: any HostProcess) {
    let b = try host("B", index: 1, member: 1)
    #expect(b.waitFor("state \(profile.joined)") != nil, replay)
    let a = try host("A", index: 0, member: 0, extra: extraA)
    #expect(a.waitFor("state \(profile.joined)") != nil, replay)
    let bSawA = b.waitFor(profile.peerSawJoin(profile.members[0])) != nil
    let aSawB = profile == .login || a.waitFor(profile.peerSawJoin(profile.members[1])) != nil
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
        uid: UInt32(id) ?? 0, appID: Array(world.edge.appID.utf8),
        kind: HandshakeRequest.channelKind, name: Array(Lab.channel.utf8))
      : HandshakeRequest(
        appID: Array(world.edge.appID.utf8), kind: HandshakeRequest.loginKind,
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

  /// Every line `host` printed, for a failure's message.
  func text(_ host: any HostProcess) -> [String] { host.lines.map(\.text) }

  /// Stops the attacker, the proxy and the edge.
  func finish() {
    attacker.stop()
    world.proxy.stop()
    world.edge.stop()
  }

  /// Leaves (channel) or logs out (login) by SIGINT, and waits for the exit.
  func leave(_ host: any HostProcess) -> Int32? {
    (host as? DeviceProcess)?.leave() ?? (host as? MessagingProcess)?.logout()
  }
}
