// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge
import TetherSodium

#if canImport(Glibc)
  import Glibc
#endif

// fuzz-edge: EdgeServer.receive and tick driven by the input, over protocol version 2
// (docs/PROTOCOL.md §12): devices (a few slots) that make handshakes of both profiles with
// tokens minted under the server's certificate (for a channel and uid, or one of a few user
// ids; expiring never, soon, later or already; for another grant, app or certificate; or
// with `W` altered), resuming their session or not, CONFIRMs from their own address or
// another, DATA of every device payload sealed under their keys (HEARTBEAT, LEAVE,
// RENEW_TOKEN, LOGIN_HEARTBEAT, CHANNEL_OPERATION, LOGOUT, PATH_RESPONSE), from their address
// or another (roaming); datagrams sent before, again or with a byte changed, from any
// address; raw bytes; version 1 datagrams; admin KICK and KICK_USER (signed or not); both
// clocks moving. Addresses, user ids and channels come from small sets so sessions meet
// again. The cryptography's random bytes are libsodium's (no input holds a byte of it).
// Properties checked after every call:
// - nothing traps;
// - no amplification (§12.13): a datagram that does not authenticate, i.e. that is not
//   DATA a device sealed under the keys of a session the server holds, not a device's
//   CONFIRM from the address its INIT came from (the ticket is bound to it: an answer
//   proves the address validated), and not an admin request whose MAC verifies, is
//   answered with no more bytes, in all, than it had;
// - a version 1 datagram gets nothing back (§12.14);
// - every datagram the server sends is at most 1200 bytes and of a kind the edge sends
//   (RESPONSE, COOKIE_REPLY, REFUSE_CLEAR, REFUSE_SEALED, DATA, RESET), or the one-byte
//   answer to an admin request;
// - at most maxSessions sessions of both profiles together; nextDeadline after `now`, or
//   nil with no session of either profile.
// Half the runs make the edge one of a fleet and let the input speak for its bus (records,
// beacons, admin actions, write answers, well formed or any bytes): the same properties.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEdge(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  var input = FuzzInput(start, count)
  guard var driver = EdgeDriver(&input) else { return 0 }
  var operations = 0
  while !input.isEmpty && operations < 256 {
    operations += 1
    driver.perform(&input)
  }
  return 0
}

enum EdgeOperation: UInt8, CaseIterable {
  case raw, join, data, confirm, replay, mutate, versionOne, admin, rawAdmin, advance, tickDue
  case login, adminKickUser, bus
}

/// A device of the fuzzer's: its last handshake, and the session keys it got.
struct FuzzDevice {
  var handshake = DeviceHandshake(crypto: SodiumCrypto())
  var confirm: ConfirmMessage?
  var keys: SessionKeys<SodiumCrypto>?
  var data: SealedData<SodiumDatagramCipher>?
  /// The last PATH_CHALLENGE the edge sent this session.
  var challenge: [UInt8] = []
}

struct EdgeDriver {
  static let certificate = Array("fuzz-certificate".utf8)
  static let channels = ["lobby", "room-2", "$reserved"]
  static let addresses = [
    [2, 0, 0x9C, 0x40, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    [2, 0, 0x9C, 0x41, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0], [2, 0, 0x9C, 0x40, 10, 0, 0, 2],
    [1],
  ].map { PeerAddress(bytes: $0)! }
  /// TETHER_FUZZ_TRACE set: each datagram's kind, the answers' kinds and the session counts.
  static let tracing = getenv("TETHER_FUZZ_TRACE") != nil
  static let users = ["alice", "bob", "carol"]

  var server: SodiumEdgeServer
  let minter: TokenMinter<SodiumCrypto>
  let otherMinter: TokenMinter<SodiumCrypto>
  var devices = [FuzzDevice](repeating: FuzzDevice(), count: 4)
  var now = Instant(nanoseconds: 5_000_000_000)
  var wallClock: UInt64 = 1_700_000_000
  /// The last datagrams sent to the server, for replays and mutations.
  var recent: [[UInt8]] = []
  /// The CONFIRMs the devices made, with the address of their INIT (their ticket's).
  var confirms: [(bytes: [UInt8], address: PeerAddress)] = []

  init?(_ input: inout FuzzInput) {
    let maxSessions = Int(input.u8() % 6) + 1
    let timeScale: Double = input.bool() ? 1 : 0.01
    guard
      var config = try? EdgeConfig(
        appID: Samples.appID, appCertificate: Self.certificate, timeScale: timeScale,
        maxSessions: maxSessions, handshakeRate: input.bool() ? 1000 : 2),
      let minter = try? TokenMinter(certificate: Self.certificate),
      let otherMinter = try? TokenMinter(certificate: Array("another-certificate".utf8))
    else { return nil }
    // Login sessions numbered 0, 1, 2...: a heartbeat or operation names one of them now
    // and then (a random start would make every one of another server session).
    config.firstLoginSession = 0
    // One of a fleet, or alone: the bus's inputs (.bus) reach only an edge of a fleet.
    if input.bool() { config.fleetIncarnation = 7 }
    server = EdgeServer(config: config)
    self.minter = minter
    self.otherMinter = otherMinter
  }

  mutating func perform(_ input: inout FuzzInput) {
    switch input.pick(EdgeOperation.allCases) {
    case .raw:
      receive(input.bytes(Int(input.u16() % 1300)), from: input.pick(Self.addresses))
    case .join:
      let slot = Int(input.u8() % 4)
      let address = input.pick(Self.addresses)
      let channel = input.pick(Self.channels)
      let uid = input.pick([0, 1, 2, 1_000_000], orAny: true)
      let grant = (try? ChannelName(validating: Array(channel.utf8))).map {
        TokenGrant.channel($0, uid: uid)
      }
      let request = HandshakeRequest(
        flags: input.bool() ? HandshakeRequest.rejoinFlag : 0, uid: uid,
        appID: input.u8() == 0xFF ? Array("other".utf8) : Samples.appID.bytes,
        kind: HandshakeRequest.channelKind, name: Array(channel.utf8))
      handshake(slot, request, grant: grant, from: address, &input)
    case .login:
      let slot = Int(input.u8() % 4)
      let address = input.pick(Self.addresses)
      let user = input.pick(Self.users)
      let request = HandshakeRequest(
        flags: input.bool() ? HandshakeRequest.rejoinFlag : 0,
        appID: input.u8() == 0xFF ? Array("other".utf8) : Samples.appID.bytes,
        kind: HandshakeRequest.loginKind, name: Array(user.utf8))
      let grant = (try? UserID(validating: Array(user.utf8))).map(TokenGrant.user)
      handshake(slot, request, grant: grant, from: address, &input)
    case .confirm:
      let slot = Int(input.u8() % 4)
      let address = input.pick(Self.addresses)
      guard let confirm = devices[slot].confirm else { return }
      receive(confirm.bytes, from: address)
    case .data:
      let slot = Int(input.u8() % 4)
      let address = input.pick(Self.addresses)
      let payload = makePayload(slot, &input)
      var out: [UInt8] = []
      guard (try? devices[slot].data?.seal(payload[...], into: &out)) != nil, !out.isEmpty
      else { return }
      let held = devices[slot].data.map { holds($0.sessionID) } ?? false
      receive(out, from: address, authenticated: held)
    case .replay:
      guard !recent.isEmpty else { return }
      // A DATA sealed for a session the server holds now is the device's own, sealed under
      // its keys, wherever it was sent first (before the session was made, it was answered
      // with nothing): if its nonce is new to the server it is as authentic as a fresh one.
      let bytes = input.pick(recent)
      let id = bytes.count >= 9 ? bytes[1..<9].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : 0
      receive(
        bytes, from: input.pick(Self.addresses),
        authenticated: bytes.first == 0x07 && holds(id))
    case .mutate:
      guard !recent.isEmpty else { return }
      var bytes = input.pick(recent)
      guard !bytes.isEmpty else { return }
      bytes[Int(input.u16()) % bytes.count] ^= max(1, input.u8())
      receive(bytes, from: input.pick(Self.addresses))
    case .versionOne:
      let body = input.bytes(Int(input.u8()))
      receive([0x54, 0x48, 0x01, input.u8() % 12] + body, from: input.pick(Self.addresses))
    case .admin:
      let address = input.pick(Self.addresses)
      guard let channel = try? ChannelName(validating: Array(input.pick(Self.channels).utf8))
      else { return }
      let kick = AdminKick(
        channel: channel, uid: input.pick([1, 2, 1_000_000], orAny: true),
        banSeconds: input.pick([0, 5, 3600], orAny: true),
        unixTime: wallClock &+ UInt64(input.u8()) &- 100, nonce: UInt64(input.u16()))
      receive(kick.sealed(appID: Samples.appID, certificate: Self.certificate), from: address)
    case .adminKickUser:
      let address = input.pick(Self.addresses)
      guard let user = try? UserID(validating: Array(input.pick(Self.users).utf8)) else { return }
      let kick = AdminKickUser(
        userID: user, banSeconds: input.pick([0, 5, 3600], orAny: true),
        unixTime: wallClock &+ UInt64(input.u8()) &- 100, nonce: UInt64(input.u16()))
      let certificate = input.u8() == 0xFF ? Array("not-the-certificate".utf8) : Self.certificate
      receive(kick.sealed(appID: Samples.appID, certificate: certificate), from: address)
    case .rawAdmin:
      receive([0x54, 0x41] + input.bytes(Int(input.u8())), from: input.pick(Self.addresses))
    case .advance:
      let ms = input.milliseconds()
      now = now + .milliseconds(ms)
      wallClock &+= ms / 1000
      tick()
    case .tickDue:
      if let due = server.nextDeadline, due > now {
        wallClock &+= due.since(now).nanoseconds / 1_000_000_000
        now = due
      }
      tick()
    case .bus:
      let heard = busInput(&input)
      check(server.fleet([heard], now: now, wallClock: wallClock), admin: false)
    }
    // Whatever the bus is asked is taken (and dropped: the fuzzer's bus answers from the
    // input, in .bus).
    _ = server.takeFleetCommands()
  }

  static let busKeys = [
    "c.lobby.1", "c.lobby.2", "c.room-2.1000000", "u.alice", "u.bob", "l.lobby.alice",
    "c.lobby.01", "c.=24reserved.1", "x.y", "",
  ]
  static let owners = [("edge-a", 1), ("edge-a", 2), ("edge-b", 9), ("localhost:0", 7)]

  /// What a fleet's bus may say (docs/FLEET.md): up, down, the end of a snapshot, a key's
  /// record (well formed, from one of a few edges, or any bytes), a beacon or admin action
  /// (well formed, or any bytes, on any subject), a write's answer.
  mutating func busInput(_ input: inout FuzzInput) -> FleetInput {
    let (edge, incarnation) = input.pick(Self.owners)
    let owner = "edge=\(edge) inc=\(String(repeating: "0", count: 15))\(incarnation)"
    switch input.u8() % 8 {
    case 0: return .up
    case 1: return .down
    case 2: return .snapshotEnd
    case 3:
      let state = input.bool() ? "joined" : "left"
      let record = "tether-fleet 1 \(owner) at=\(input.u16()) state=\(state)"
      let value: [UInt8]? = input.bool() ? nil : Array(record.utf8)
      return .entry(
        FleetEntry(key: input.pick(Self.busKeys), value: value, revision: UInt64(input.u8())))
    case 4:
      return .entry(
        FleetEntry(
          key: input.pick(Self.busKeys), value: input.bytes(Int(input.u8())),
          revision: UInt64(input.u16())))
    case 5:
      let silent = "\(input.pick(Self.busKeys)):\(input.u16())"
      let text =
        input.bool()
        ? "tether-beacon 1 \(owner) silent=\(silent)"
        : "tether-admin 1 \(owner) channel=lobby uid=\(input.u8() % 3) until=\(input.u16())"
      return .message(subject: input.bool() ? "beacon" : "tether.x.admin", payload: Array(text.utf8))
    case 6:
      return .message(subject: input.pick(["beacon", "admin", "other"]), payload: input.bytes(Int(input.u8())))
    default:
      let result: FleetWriteResult = [.written(revision: UInt64(input.u8())), .conflict, .failed][
        Int(input.u8() % 3)]
      return .written(tag: UInt64(input.u8() % 8), result)
    }
  }

  /// A token for `grant` (or, as the input says, for another grant, another app, under
  /// another certificate, expiring soon or already, or with `W` altered); nil when its text
  /// does not parse (an altered character can make it so).
  mutating func makeToken(_ input: inout FuzzInput, grant: TokenGrant?) -> TokenV2? {
    let kind = input.u8()
    let expiry: UInt64 = [0, wallClock + 5, wallClock + 3600, wallClock - 1][Int(kind / 8 % 4)]
    var granted = grant ?? .user(Samples.user)
    if kind % 8 == 1 { granted = .user(Samples.otherUser) }
    if kind % 8 == 2, case .channel(let channel, let uid) = granted {
      granted = .channel(channel, uid: uid &+ 1)
    }
    if kind % 8 == 3, case .channel(let channel, _) = granted {
      granted = .channel(channel, uid: 0)
    }
    let app =
      kind % 8 == 4
      ? (try? AppID(validating: Array("other".utf8))) ?? Samples.appID
      : Samples.appID
    var text = Array(
      (kind % 8 == 5 ? otherMinter : minter).mint(appID: app, grant: granted, expiresAt: expiry)
        .utf8)
    if kind % 8 == 6 { text[2 + Int(input.u8()) % (text.count - 2)] = 0x41 }
    return try? TokenV2(text: text[...], crypto: SodiumCrypto())
  }

  /// An INIT from device `slot` at `address` (resuming its session, as the input says),
  /// and what the edge answers taken by its handshake (a RESPONSE gives it keys and a
  /// CONFIRM to send).
  mutating func handshake(
    _ slot: Int, _ request: HandshakeRequest, grant: TokenGrant?, from address: PeerAddress,
    _ input: inout FuzzInput
  ) {
    guard let token = makeToken(&input, grant: grant) else { return }
    let resume =
      input.bool()
      ? devices[slot].keys.map {
        DeviceHandshake<SodiumCrypto>.Resume(sessionID: $0.sessionID, key: $0.resumeKey)
      } : nil
    guard
      let initiation = try? devices[slot].handshake.initiate(
        token: token, request: request, resume: resume)
    else { return }
    let sent = receive(initiation.bytes, from: address)
    for answer in sent where answer.address == address {
      switch try? devices[slot].handshake.receive(answer.bytes[...]) {
      case .established(let established)?:
        devices[slot].confirm = established.confirm
        if confirms.count == 16 { confirms.removeFirst() }
        confirms.append((established.confirm.bytes, address))
        devices[slot].keys = established.keys
        devices[slot].data = established.keys.deviceData()
      default: break
      }
    }
  }

  /// A device payload of §12.7 for device `slot`, its fields from the input.
  mutating func makePayload(_ slot: Int, _ input: inout FuzzInput) -> [UInt8] {
    func be(_ value: UInt32) -> [UInt8] {
      (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }
    switch input.u8() % 8 {
    case 0: return [0x02] + be(input.u32()) + [0, 0, 0, 0]
    case 1: return [0x03] + [UInt8](repeating: 0, count: 8)
    case 2:
      let grant = devices[slot].keys.flatMap { keys in
        server.session(cookie: keys.sessionID).map { TokenGrant.channel($0.channel, uid: $0.uid) }
          ?? server.loginSession(cookie: keys.sessionID).map { TokenGrant.user($0.userID) }
      }
      return [0x04] + (makeToken(&input, grant: grant)?.sent ?? input.bytes(219))
    case 3:
      return [0x06] + be(input.u32()) + be(input.pick([0, 1, 2, 3], orAny: true))
        + be(input.pick([0, 1, 2, 3], orAny: true))
    case 4:
      let name = Array(input.pick(Self.channels).utf8)
      return [0x08] + be(input.pick([0, 1, 2, 3], orAny: true))
        + be(input.pick([1, 2, 3, 4], orAny: true)) + [input.bool() ? 1 : 2, UInt8(name.count)]
        + name + [UInt8](repeating: 0, count: 63 - name.count)
    case 5: return [0x07] + [UInt8](repeating: 0, count: 8)
    case 6:
      let challenge = devices[slot].challenge
      return [0x09] + (challenge.count == 8 ? challenge : input.bytes(8))
    default: return input.bytes(Int(input.u8() % 80))
    }
  }

  func holds(_ id: UInt64) -> Bool {
    server.session(cookie: id) != nil || server.loginSession(cookie: id) != nil
  }

  @discardableResult
  mutating func receive(
    _ datagram: [UInt8], from address: PeerAddress, authenticated: Bool = false
  ) -> [Outgoing] {
    if recent.count == 16 { recent.removeFirst() }
    recent.append(datagram)
    let admin =
      datagram.count >= 2 && datagram[0] == 0x54 && datagram[1] == 0x41
      && (try? AdminRequest.open(
        datagram[...], appID: Samples.appID, certificate: Self.certificate)) != nil
    let validated = confirms.contains { $0.bytes == datagram && $0.address == address }
    let sent = server.receive(datagram[...], from: address, now: now, wallClock: wallClock)
    let total = sent.reduce(0) { $0 + $1.bytes.count }
    require(
      authenticated || admin || validated || total <= datagram.count,
      "amplification: \(datagram.count) bytes (kind \(datagram.first ?? 0)) answered with "
        + "\(total) bytes: \(sent.map(\.bytes.count))")
    if datagram.starts(with: [0x54, 0x48, 0x01]) {
      require(sent.isEmpty, "a version 1 datagram was answered: \(sent.map(\.bytes))")
    }
    if Self.tracing {
      print(
        "in \(datagram.first ?? 0) (\(datagram.count) B): out \(sent.map { $0.bytes.first ?? 0 }),"
          + " \(server.sessionCount) channel and \(server.loginSessionCount) login sessions")
    }
    check(sent, admin: datagram.count >= 2 && datagram[0] == 0x54 && datagram[1] == 0x41)
    return sent
  }

  mutating func tick() {
    check(server.tick(now: now, wallClock: wallClock), admin: false)
  }

  /// The properties of what the server sent; the devices take the path challenges sealed
  /// for their sessions.
  mutating func check(_ sent: [Outgoing], admin: Bool) {
    for outgoing in sent {
      let bytes = outgoing.bytes
      if admin && bytes.count == 1 {
        require(AdminStatus(rawValue: bytes[0]) != nil, "admin answer \(bytes)")
        continue
      }
      require(bytes.count <= 1200, "sent \(bytes.count) bytes")
      require(
        [0x02, 0x04, 0x05, 0x06, 0x07, 0x08].contains(bytes.first ?? 0),
        "sent a datagram of kind \(bytes.first ?? 0)")
      guard bytes.first == 0x07 else { continue }
      for slot in devices.indices {
        var payload: [UInt8] = []
        guard (try? devices[slot].data?.open(bytes[...], into: &payload)) != nil else { continue }
        if payload.first == 0x8D, payload.count == 9 {
          devices[slot].challenge = Array(payload.dropFirst())
        }
      }
    }
    let sessions = server.sessionCount + server.loginSessionCount
    require(sessions <= server.config.maxSessions, "\(sessions) sessions")
    if let due = server.nextDeadline {
      require(due > now, "server deadline \(due) not after \(now)")
    } else {
      require(sessions == 0, "sessions held and no deadline")
    }
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeEdge(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(EdgeSeeds.all)
  return 0
}
