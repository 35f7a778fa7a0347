// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

#if canImport(Glibc)
  import Glibc
#endif

// fuzz-edge: EdgeServer.receive and tick driven by the input: raw datagrams, client
// messages of both profiles built from fields by the codec's encoders (JOIN, HEARTBEAT,
// LEAVE, RENEW_TOKEN; LOGIN and RELOGIN, LOGIN_HEARTBEAT, CHANNEL_OPERATION, LOGOUT and
// RENEW_TOKEN under login cookies), tokens signed by the server's certificate (for a
// channel and uid, or for one of a few user ids) or not, cookies, user ids and source
// addresses from small sets so sessions meet again, admin KICK and KICK_USER (signed or
// not), and both clocks moving. Properties checked after every call:
// - nothing traps;
// - no amplification (docs/PROTOCOL.md, issue 8 §6): a datagram that does not
//   authenticate, i.e. whose cookie is not one of a session (channel or login) the server
//   holds, that is not a JOIN or LOGIN with a token that verifies, and not an admin
//   request whose MAC verifies, is answered with no more bytes, in all, than it had;
// - every datagram the server sends is a server → client packet of at most 1200 bytes
//   (or the one-byte answer to an admin request), under the request's cookie or the
//   cookie of a session held before or after the call;
// - at most maxSessions sessions of both profiles together; one cookie names at most one
//   session, of either profile; nextDeadline after `now`, or nil with no session of
//   either profile.

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
  case raw, join, heartbeat, leave, renew, admin, rawAdmin, advance, tickDue
  case login, loginHeartbeat, channelOperation, logout, adminKickUser
}

struct EdgeDriver {
  static let certificate = Array("fuzz-certificate".utf8)
  static let channels = ["lobby", "room-2", "$reserved"].map {
    try! ChannelName(validating: Array($0.utf8))
  }
  static let addresses = [[1], [2], [10, 0, 0, 1], []].map { PeerAddress(bytes: $0)! }
  /// TETHER_FUZZ_TRACE set: each datagram's type, the answers' types and the session counts.
  static let tracing = getenv("TETHER_FUZZ_TRACE") != nil
  static let users = ["alice", "bob", "carol"].map { try! UserID(validating: Array($0.utf8)) }

  var server: SodiumEdgeServer
  let signer: TokenSigner
  var now = Instant(nanoseconds: 5_000_000_000)
  var wallClock: UInt64 = 1_700_000_000
  /// Every cookie the input used: the ones whose sessions are checked around each call.
  var cookies: [UInt64] = []

  init?(_ input: inout FuzzInput) {
    let maxSessions = Int(input.u8() % 6) + 1
    let timeScale: Double = input.bool() ? 1 : 0.01
    guard
      var config = try? EdgeConfig(
        appID: Samples.appID, appCertificate: Self.certificate, timeScale: timeScale,
        maxSessions: maxSessions)
    else { return nil }
    // Login sessions numbered 0, 1, 2...: a heartbeat or operation names one of them now
    // and then (a random start would make every one of another server session).
    config.firstLoginSession = 0
    server = EdgeServer(config: config)
    signer = TokenSigner(appID: Samples.appID, certificate: Self.certificate)
  }

  mutating func perform(_ input: inout FuzzInput) {
    switch input.pick(EdgeOperation.allCases) {
    case .raw:
      let address = input.pick(Self.addresses)
      receive(input.bytes(Int(input.u16() % 1300)), from: address)
    case .join:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      let channel = input.pick(Self.channels)
      let uid = input.pick([0, 1, 2, 1_000_000], orAny: true)
      let token = makeToken(&input, channel: channel, uid: uid)
      let appID = input.u8() == 0xFF ? try! AppID(validating: Array("other".utf8)) : Samples.appID
      let request = JoinRequest(
        uid: uid, appID: appID, channel: channel, token: token, isRejoin: input.bool())
      receive(Packet(cookie: cookie, message: .join(request)).encoded, from: address)
    case .heartbeat:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      receive(
        Packet(cookie: cookie, message: .heartbeat(sequence: input.u32())).encoded, from: address)
    case .leave:
      let address = input.pick(Self.addresses)
      receive(Packet(cookie: pickCookie(&input), message: .leave).encoded, from: address)
    case .renew:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      let token: Token
      if let login = server.loginSession(cookie: cookie) {
        token = makeLoginToken(&input, userID: login.userID)
      } else {
        let held = server.session(cookie: cookie)
        token = makeToken(&input, channel: held?.channel ?? Self.channels[0], uid: held?.uid ?? 1)
      }
      receive(Packet(cookie: cookie, message: .renewToken(token)).encoded, from: address)
    case .admin:
      let address = input.pick(Self.addresses)
      let kick = AdminKick(
        channel: input.pick(Self.channels), uid: input.pick([1, 2, 1_000_000], orAny: true),
        banSeconds: input.pick([0, 5, 3600], orAny: true),
        unixTime: wallClock &+ UInt64(input.u8()) &- 100, nonce: UInt64(input.u16()))
      receive(kick.sealed(appID: Samples.appID, certificate: Self.certificate), from: address)
    case .login:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      let userID = input.pick(Self.users)
      let token = makeLoginToken(&input, userID: userID)
      let appID = input.u8() == 0xFF ? try! AppID(validating: Array("other".utf8)) : Samples.appID
      let request = LoginRequest(
        appID: appID, userID: userID, token: token, isRelogin: input.bool())
      receive(Packet(cookie: cookie, message: .login(request)).encoded, from: address)
    case .loginHeartbeat:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      let message = Message.loginHeartbeat(
        sequence: input.u32(), session: input.pick([0, 1, 2, 3], orAny: true),
        eventsReceived: input.pick([0, 1, 2, 3], orAny: true))
      receive(Packet(cookie: cookie, message: message).encoded, from: address)
    case .channelOperation:
      let address = input.pick(Self.addresses)
      let cookie = pickCookie(&input)
      let operation = ChannelOperation(
        session: input.pick([0, 1, 2, 3], orAny: true),
        sequence: input.pick([1, 2, 3, 4], orAny: true), kind: input.bool() ? .join : .leave,
        channel: input.pick(Self.channels))
      receive(Packet(cookie: cookie, message: .channelOperation(operation)).encoded, from: address)
    case .logout:
      let address = input.pick(Self.addresses)
      receive(Packet(cookie: pickCookie(&input), message: .logout).encoded, from: address)
    case .adminKickUser:
      let address = input.pick(Self.addresses)
      let kick = AdminKickUser(
        userID: input.pick(Self.users), banSeconds: input.pick([0, 5, 3600], orAny: true),
        unixTime: wallClock &+ UInt64(input.u8()) &- 100, nonce: UInt64(input.u16()))
      let certificate = input.u8() == 0xFF ? Array("not-the-certificate".utf8) : Self.certificate
      receive(kick.sealed(appID: Samples.appID, certificate: certificate), from: address)
    case .rawAdmin:
      let address = input.pick(Self.addresses)
      receive([0x54, 0x41] + input.bytes(Int(input.u8())), from: address)
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
    }
  }

  /// A cookie from a small set (so sessions are met again), or any.
  mutating func pickCookie(_ input: inout FuzzInput) -> UInt64 {
    let choice = input.u8() % 6
    let cookie = choice < 5 ? UInt64(choice) + 1 : input.u64()
    if !cookies.contains(cookie) && cookies.count < 64 { cookies.append(cookie) }
    return cookie
  }

  /// A token signed with the server's certificate (for `channel` and `uid`, or the
  /// wildcard uid 0; expiring never, soon, later, or already) or bytes that are not one.
  mutating func makeToken(_ input: inout FuzzInput, channel: ChannelName, uid: UInt32) -> Token {
    let kind = input.u8()
    guard kind % 4 != 3 else {
      return (try? Token(validating: input.bytes(Int(input.u8())))) ?? Samples.token
    }
    let expiry: UInt64 = [0, wallClock + 5, wallClock + 3600, wallClock - 1][Int(kind / 4 % 4)]
    let grantUID = kind % 4 == 0 ? 0 : uid &+ UInt32(kind % 4 == 2 ? 1 : 0)
    let text = signer.sign(.channel(channel, uid: grantUID), expiresAt: expiry)
    return (try? Token(validating: text)) ?? Samples.token
  }

  /// A login token signed with the server's certificate for `userID` (or another user;
  /// expiring never, soon, later, or already), or bytes that are not one.
  mutating func makeLoginToken(_ input: inout FuzzInput, userID: UserID) -> Token {
    let kind = input.u8()
    guard kind % 4 != 3 else {
      return (try? Token(validating: input.bytes(Int(input.u8())))) ?? Samples.token
    }
    let expiry: UInt64 = [0, wallClock + 5, wallClock + 3600, wallClock - 1][Int(kind / 4 % 4)]
    let grant = kind % 4 == 2 ? input.pick(Self.users) : userID
    let text = signer.sign(.user(grant), expiresAt: expiry)
    return (try? Token(validating: text)) ?? Samples.token
  }

  func holds(_ cookie: UInt64) -> Bool {
    server.session(cookie: cookie) != nil || server.loginSession(cookie: cookie) != nil
  }

  mutating func receive(_ datagram: [UInt8], from address: PeerAddress) {
    let heldBefore = cookies.filter { holds($0) }
    let authenticated = authenticates(datagram)
    let sent = server.receive(datagram[...], from: address, now: now, wallClock: wallClock)
    let request = try? Packet.decode(datagram[...])
    if let cookie = request?.cookie, !cookies.contains(cookie) && cookies.count < 64 {
      cookies.append(cookie)
    }
    let total = sent.reduce(0) { $0 + $1.bytes.count }
    require(
      authenticated || total <= datagram.count,
      "amplification: \(datagram.count) bytes \(datagram) answered with \(total) bytes: "
        + "\(sent.map(\.bytes))")
    let isAdmin = datagram.count >= 2 && datagram[0] == 0x54 && datagram[1] == 0x41
    if Self.tracing {
      let answers = sent.map { ($0.bytes.count > 3 ? $0.bytes[3] : 0) }
      print(
        "in \(datagram.count > 3 ? datagram[3] : 0) (\(datagram.count) B): out \(answers),"
          + " \(server.sessionCount) channel and \(server.loginSessionCount) login sessions")
    }
    check(sent, requestCookie: request?.cookie, heldBefore: heldBefore, admin: isAdmin)
  }

  mutating func tick() {
    let heldBefore = cookies.filter { holds($0) }
    let sent = server.tick(now: now, wallClock: wallClock)
    check(sent, requestCookie: nil, heldBefore: heldBefore, admin: false)
  }

  /// Whether `datagram` proves anything: its cookie is held, it is a JOIN or LOGIN whose
  /// token verifies, or an admin request whose MAC does.
  func authenticates(_ datagram: [UInt8]) -> Bool {
    if datagram.count >= 2 && datagram[0] == 0x54 && datagram[1] == 0x41 {
      return
        (try? AdminRequest.open(
          datagram[...], appID: Samples.appID, certificate: Self.certificate)) != nil
    }
    guard let packet = try? Packet.decode(datagram[...]) else { return false }
    if holds(packet.cookie) { return true }
    switch packet.message {
    case .join(let request):
      return
        (try? signer.verify(
          request.token.bytes, for: .channel(request.channel, uid: request.uid),
          wallClock: wallClock)) != nil
    case .login(let request):
      return
        (try? signer.verify(request.token.bytes, for: .user(request.userID), wallClock: wallClock))
        != nil
    default: return false
    }
  }

  func check(_ sent: [Outgoing], requestCookie: UInt64?, heldBefore: [UInt64], admin: Bool) {
    for outgoing in sent {
      let bytes = outgoing.bytes
      if admin && bytes.count == 1 {
        require(AdminStatus(rawValue: bytes[0]) != nil, "admin answer \(bytes)")
        continue
      }
      require(bytes.count <= Packet.maximumSize, "sent \(bytes.count) bytes")
      guard let packet = try? Packet.decode(bytes[...]) else {
        fatalError("property violated: sent a datagram that does not decode: \(bytes)")
      }
      switch packet.message {
      case .join, .heartbeat, .leave, .renewToken, .login, .loginHeartbeat, .logout,
        .channelOperation:
        fatalError("property violated: the server sent \(packet.message)")
      default: break
      }
      let cookie = packet.cookie
      require(
        cookie == requestCookie || heldBefore.contains(cookie) || holds(cookie),
        "sent under cookie \(cookie), which no session held")
    }
    let sessions = server.sessionCount + server.loginSessionCount
    require(sessions <= server.config.maxSessions, "\(sessions) sessions")
    for cookie in cookies {
      require(
        server.session(cookie: cookie) == nil || server.loginSession(cookie: cookie) == nil,
        "cookie \(cookie) names a channel and a login session")
    }
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
