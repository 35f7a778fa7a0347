import TetherCore
import TetherEdge

// fuzz-edge: EdgeServer.receive and tick driven by the input: raw datagrams, client
// messages built from fields (with tokens signed by the server's certificate or not,
// cookies and source addresses from small sets so sessions meet again), admin requests
// (signed or not), and both clocks moving. Properties checked after every call:
// - nothing traps;
// - no amplification (docs/PROTOCOL.md, issue 8 §6): a datagram that does not
//   authenticate, i.e. whose cookie is not one of a session the server holds, that is not a
//   JOIN with a token that verifies, and not an admin request whose MAC verifies, is
//   answered with no more bytes, in all, than it had;
// - every datagram the server sends is a server → client packet of at most 1200 bytes
//   (or the one-byte answer to an admin request), under the request's cookie or the
//   cookie of a session held before or after the call;
// - at most maxSessions sessions; nextDeadline after `now`, or nil with no session.

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
}

struct EdgeDriver {
  static let certificate = Array("fuzz-certificate".utf8)
  static let channels = ["lobby", "room-2", "$reserved"].map {
    try! ChannelName(validating: Array($0.utf8))
  }
  static let addresses = [[1], [2], [10, 0, 0, 1], []].map { PeerAddress(bytes: $0)! }

  var server: EdgeServer
  let signer: TokenSigner
  var now = Instant(nanoseconds: 5_000_000_000)
  var wallClock: UInt64 = 1_700_000_000
  /// Every cookie the input used: the ones whose sessions are checked around each call.
  var cookies: [UInt64] = []

  init?(_ input: inout FuzzInput) {
    let maxSessions = Int(input.u8() % 6) + 1
    let timeScale: Double = input.bool() ? 1 : 0.01
    guard
      let config = try? EdgeConfig(
        appID: Samples.appID, appCertificate: Self.certificate, timeScale: timeScale,
        maxSessions: maxSessions)
    else { return nil }
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
      let held = server.session(cookie: cookie)
      let token = makeToken(
        &input, channel: held?.channel ?? Self.channels[0], uid: held?.uid ?? 1)
      receive(Packet(cookie: cookie, message: .renewToken(token)).encoded, from: address)
    case .admin:
      let address = input.pick(Self.addresses)
      let kick = AdminKick(
        channel: input.pick(Self.channels), uid: input.pick([1, 2, 1_000_000], orAny: true),
        banSeconds: input.pick([0, 5, 3600], orAny: true),
        unixTime: wallClock &+ UInt64(input.u8()) &- 100, nonce: UInt64(input.u16()))
      receive(kick.sealed(appID: Samples.appID, certificate: Self.certificate), from: address)
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

  mutating func receive(_ datagram: [UInt8], from address: PeerAddress) {
    let heldBefore = cookies.filter { server.session(cookie: $0) != nil }
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
    check(sent, requestCookie: request?.cookie, heldBefore: heldBefore, admin: isAdmin)
  }

  mutating func tick() {
    let heldBefore = cookies.filter { server.session(cookie: $0) != nil }
    let sent = server.tick(now: now, wallClock: wallClock)
    check(sent, requestCookie: nil, heldBefore: heldBefore, admin: false)
  }

  /// Whether `datagram` proves anything: its cookie is held, it is a JOIN whose token
  /// verifies, or an admin request whose MAC does.
  func authenticates(_ datagram: [UInt8]) -> Bool {
    if datagram.count >= 2 && datagram[0] == 0x54 && datagram[1] == 0x41 {
      return
        (try? AdminKick.open(
          datagram[...], appID: Samples.appID, certificate: Self.certificate)) != nil
    }
    guard let packet = try? Packet.decode(datagram[...]) else { return false }
    if server.session(cookie: packet.cookie) != nil { return true }
    guard case .join(let request) = packet.message else { return false }
    return
      (try? signer.verify(
        request.token.bytes, for: .channel(request.channel, uid: request.uid),
        wallClock: wallClock)) != nil
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
      case .join, .heartbeat, .leave, .renewToken:
        fatalError("property violated: the server sent \(packet.message)")
      default: break
      }
      let cookie = packet.cookie
      require(
        cookie == requestCookie || heldBefore.contains(cookie)
          || server.session(cookie: cookie) != nil,
        "sent under cookie \(cookie), which no session held")
    }
    require(server.sessionCount <= server.config.maxSessions, "\(server.sessionCount) sessions")
    if let due = server.nextDeadline {
      require(due > now, "server deadline \(due) not after \(now)")
    } else {
      require(server.sessionCount == 0, "sessions held and no deadline")
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
