// SPDX-License-Identifier: Apache-2.0
@_spi(Link) import TetherCore
import TetherEdge

#if canImport(Glibc)
  import Glibc
#endif

// fuzz-link: the device's side of protocol version 2 end to end (docs/PROTOCOL.md §12): a
// ChannelSession or (flag 1) a LoginSession behind its SecureLink on the null seam
// (Fuzz/Support/NullSeam.swift: the null AEAD opens a text whose tag is zero, the null
// X25519 lets any RESPONSE complete), driven as the C driver drives them through join or
// login, then by the input: raw datagrams of every kind (as they come, or with the
// attempt's nonce, the session's id, the next counter and a zero tag patched in), a
// RESPONSE to the last INIT made by TetherCore's EdgeHandshake, accepts, server messages
// built from fields, RESETs, replays of what was delivered, clock advances that fire every
// deadline at its instant, and the app's calls; flag 2 reads the config from the input,
// flag 4 sets the device's wall clock (so expired tokens are refused before any send), flag
// 8 makes the key limits tiny (rekeys, hard limits). Properties checked after every step:
// - nothing traps, AddressSanitizer stays quiet;
// - every datagram the link sends is one of version 2's device kinds of its exact size: an
//   INIT of 469 bytes, version 2, whose request the edge's half (EdgeHandshake) opens and
//   decodes as this session's (kind, app id, channel or user id); a CONFIRM of 201; a DATA
//   of the held or the confirmed session's id, sealed (its tag zero), whose payload the edge's decoder
//   (DevicePayload) takes as one of this profile's messages, 42, 46, 107 or 253 bytes;
// - a datagram that cannot authenticate under the session's keys (with the null AEAD: a
//   DATA, RESPONSE, COOKIE_REPLY or REFUSE_SEALED whose tag is not zero; a REFUSE_CLEAR not
//   of §12.6's layout; a RESET not of the confirmed session's id; any other kind) sends
//   nothing, reports nothing, draws no random byte and changes no state: a twin of the
//   session and its layer gets every step but those datagrams, and both must send the same
//   bytes, report the same notifications, and hold the same state, deadline and session id
//   after every step from then on.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLink(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  var input = FuzzInput(start, count)
  let flags = input.u8()
  if flags & 1 == 0 {
    LinkDriver<ChannelSession<SeededRandom>>.fuzz(&input, flags: flags)
  } else {
    LinkDriver<LoginSession<SeededRandom>>.fuzz(&input, flags: flags)
  }
  return 0
}

/// Whether `TETHER_FUZZ_TRACE` is set (read once).
let linkTracing = getenv("TETHER_FUZZ_TRACE") != nil

/// What the fuzzer's input does next.
enum LinkOperation: UInt8, CaseIterable {
  case raw, answer, respond, accept, message, reset, replay, advance, runToDeadline
  case start, end, renew, other
}

/// The profile-specific part of fuzz-link: the calls and the server's own messages.
protocol LinkedProfile: LinkSession, FuzzedSession
where State: Equatable, Notification: Equatable {
  static var isLogin: Bool { get }
  /// The start call (join, login) with `token`.
  mutating func start(token: Token, now: Instant, into output: inout SessionOutput<Notification>)
  /// The end call (leave, logout).
  mutating func end(now: Instant, into output: inout SessionOutput<Notification>)
  mutating func renew(token: Token, now: Instant, into output: inout SessionOutput<Notification>)
  /// Another call of the profile, chosen by `selector`.
  mutating func other(
    _ selector: UInt8, now: Instant, into output: inout SessionOutput<Notification>)
  /// How many server messages ``Samples/serverMessage(_:kinds:own:)`` builds for it.
  static var messageKinds: UInt8 { get }
  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message
  /// The payload types (§12.7) this profile's device sends.
  static var sentTypes: Set<UInt8> { get }
}

struct LinkDriver<Session: LinkedProfile> {
  typealias Subject = LinkedSubject<Session>
  var real: Subject
  /// Gets every step but the datagrams that must change nothing.
  var twin: Subject
  let random: NullRandom
  var now = Instant(nanoseconds: 1_000_000_000)
  /// Deadlines this input may still fire: each firing is two steps (the twin's too) and
  /// their checks, and a heartbeat a second over a long advance fires thousands; the input
  /// stops there (a cost cap, not a property).
  var firingsLeft = 2_000
  /// The last INIT the device sent; the session id of its last CONFIRM.
  var lastInit: [UInt8] = []
  var confirmID: UInt64 = 0
  /// The edge's next counter, per session id.
  var counters: [UInt64: UInt64] = [:]
  /// The last datagrams delivered, for replays.
  var history: [[UInt8]] = []

  /// The tokens a start or a renewal picks from: two of version 2, one whose public expiry
  /// has passed (by the wall clock of flag 4), and a version 1 text.
  static var tokens: [Token] {
    [
      NullEdge.token(), NullEdge.token(filler: 0x33), NullEdge.token(expiry: 1_000_000_000),
      Samples.token,
    ]
  }

  /// Runs one input (after its flags); returns the driver where the input left it (the
  /// seeds read it), nil for a config the session refuses.
  @discardableResult
  static func fuzz(_ input: inout FuzzInput, flags: UInt8) -> LinkDriver? {
    var config = Session.Config(appID: Samples.appID)
    if flags & 2 != 0 { config.read(&input) }
    let seed = input.u64()
    guard let session = try? Session(config: config, random: SeededRandom(seed: seed)) else {
      return nil
    }
    let random = NullRandom(seed: seed)
    var subject = Subject(session: session, crypto: NullSeam(random: random))
    if flags & 8 != 0 {
      subject.link = SecureLink(
        crypto: subject.link.crypto,
        limits: KeyLimits(
          rekeyAfterMessages: 4, rejectAfterMessages: 8, rekeyAfterFailedOpens: 2,
          rejectAfterFailedOpens: 4))
    }
    if flags & 4 != 0 { subject.link.unixTime = 2_000_000_000 }
    var driver = LinkDriver(real: subject, twin: subject, random: random)
    driver.step { s, now in
      s.call(at: now) { s, now, out in s.start(token: NullEdge.token(), now: now, into: &out) }
    }
    var operations = 0
    while !input.isEmpty && operations < 256 && driver.firingsLeft > 0 {
      operations += 1
      driver.perform(&input)
    }
    return driver
  }

  /// `TETHER_FUZZ_TRACE=1 build/fuzz/fuzz-link INPUT` prints every operation and datagram.
  static var tracing: Bool { linkTracing }

  func trace(_ line: @autoclosure () -> String) {
    if Self.tracing { fputs("\(now.nanoseconds / 1_000_000) ms: \(line())\n", stderr) }
  }

  func describe(_ datagram: ArraySlice<UInt8>) -> String {
    let b = datagram.startIndex
    let kind = datagram.first ?? 0
    var text = "kind \(kind), \(datagram.count) bytes"
    if [0x03, 0x07, 0x08].contains(kind), datagram.count >= 9 {
      text += ", id \(bigEndianValue(datagram[(b + 1)..<(b + 9)]))"
    }
    if kind == 0x07, datagram.count >= 34 {
      text += ", counter \(bigEndianValue(datagram[(b + 9)..<(b + 17)])), type \(datagram[b + 17])"
    }
    return text
  }

  mutating func perform(_ input: inout FuzzInput) {
    let operation = input.pick(LinkOperation.allCases)
    trace("\(operation); state \(real.session.state), session \(real.link.sessionID)")
    switch operation {
    case .raw: deliver(input.bytes(Int(input.u16() % 1300)))
    case .answer: answer(&input)
    case .respond:
      // One of the ids the session knows, or any.
      let ids = [1, 0x0102_0304_0000_0001, confirmID, real.link.sessionID]
      let choice = Int(input.u8()) % (ids.count + 1)
      let id = choice < ids.count ? ids[choice] : input.u64()
      let lifetime = input.pick([0, 1, 1_000, 10_000, 120_000], orAny: false)
      if let response = NullEdge.response(
        to: lastInit[...], sessionID: id, lifetimeMs: UInt32(lifetime), crypto: real.link.crypto)
      {
        deliver(response)
      }
    case .accept:
      let accept = NullEdge.accept(login: Session.isLogin, resumed: input.bool())
      deliver(data(NullEdge.payload(accept), confirmed: input.bool()))
    case .message:
      let message = Samples.serverMessage(
        &input, kinds: Session.messageKinds, own: Session.ownMessage)
      let payload = NullEdge.payload(message, detail: input.u8() % 4)
      deliver(data(payload, confirmed: input.bool()))
    case .reset:
      let id = input.bool() ? real.link.sessionID : confirmID
      deliver(NullEdge.reset(sessionID: id))
    case .replay:
      let index = Int(input.u8())
      if !history.isEmpty { deliver(history[index % history.count]) }
    case .advance: run(until: now + .milliseconds(input.milliseconds()))
    case .runToDeadline:
      if let due = real.session.nextDeadline { run(until: due) }
    case .start:
      let token = input.pick(Self.tokens)
      step { s, now in
        s.call(at: now) { s, now, out in s.start(token: token, now: now, into: &out) }
      }
    case .end:
      step { s, now in s.call(at: now) { s, now, out in s.end(now: now, into: &out) } }
    case .renew:
      let token = input.pick(Self.tokens)
      step { s, now in
        s.call(at: now) { s, now, out in s.renew(token: token, now: now, into: &out) }
      }
    case .other:
      let selector = input.u8()
      step { s, now in
        s.call(at: now) { s, now, out in s.other(selector, now: now, into: &out) }
      }
    }
  }

  // MARK: - Datagrams

  /// A datagram of the input's bytes, made to reach further by the mode's bits: 1 the
  /// attempt's `N_d` (a handshake answer) or the session's id (DATA, RESET; 8: the
  /// confirmed one rather than the last CONFIRM's), 2 the next counter (DATA), 4 a zero tag.
  mutating func answer(_ input: inout FuzzInput) {
    let mode = input.u8()
    var bytes = input.bytes(Int(input.u16() % 1300))
    guard let kind = bytes.first else { return deliver(bytes) }
    let id = mode & 8 == 0 ? confirmID : real.link.sessionID
    if mode & 1 != 0 {
      if [0x02, 0x04, 0x05, 0x06].contains(kind), bytes.count >= 17, lastInit.count >= 18 {
        bytes.replaceSubrange(1..<17, with: lastInit[2..<18])
      } else if kind == 0x07 || kind == 0x08, bytes.count >= 9 {
        bytes.replaceSubrange(1..<9, with: Self.bigEndian(id))
      }
    }
    if mode & 2 != 0, kind == 0x07, bytes.count >= 17 {
      bytes.replaceSubrange(9..<17, with: Self.bigEndian(nextCounter(id)))
    }
    if mode & 4 != 0, bytes.count >= 16 {
      bytes.replaceSubrange((bytes.count - 16)..., with: repeatElement(0, count: 16))
    }
    deliver(bytes)
  }

  /// DATA carrying `payload` under the last CONFIRM's session id (or the confirmed one),
  /// at the edge's next counter.
  mutating func data(_ payload: [UInt8], confirmed: Bool) -> [UInt8] {
    let id = confirmed ? real.link.sessionID : confirmID
    return NullEdge.data(sessionID: id, counter: nextCounter(id), payload: payload)
  }

  mutating func nextCounter(_ id: UInt64) -> UInt64 {
    defer { counters[id, default: 0] &+= 1 }
    return counters[id, default: 0]
  }

  static func bigEndian(_ value: UInt64) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.appendBigEndian(value)
    return bytes
  }

  /// Hands `datagram` to the link: to both subjects, or, if it cannot authenticate, to the
  /// real one alone, which must then do nothing at all.
  mutating func deliver(_ datagram: [UInt8]) {
    trace(
      "  in: \(describe(datagram[...]))\(mustChangeNothing(datagram) ? " (cannot authenticate)" : "")"
    )
    if history.count == 16 { history.removeFirst() }
    history.append(datagram)
    guard mustChangeNothing(datagram) else {
      step { s, now in s.receive(datagram[...], at: now) }
      return
    }
    let drawn = random.generator.state
    real.receive(datagram[...], at: now)
    require(random.generator.state == drawn, "\(datagram) drew random bytes")
    require(
      real.output.actionCount == 0,
      "\(datagram), which cannot authenticate, sent \(real.output.datagrams) and reported "
        + "\(real.output.notifications)")
    compareState()
  }

  /// Whether `datagram` cannot authenticate under the session's keys (with the null AEAD:
  /// its tag is not zero), so that it must change nothing (§12.7, §12.9).
  func mustChangeNothing(_ datagram: [UInt8]) -> Bool {
    guard let kind = datagram.first else { return true }
    let tagZero = datagram.count >= 16 && datagram.suffix(16).allSatisfy { $0 == 0 }
    switch kind {
    case 0x07: return datagram.count < 34 || !tagZero
    case 0x02: return datagram.count != 269 || !tagZero
    case 0x04: return datagram.count != 73 || !tagZero
    case 0x06: return datagram.count != 59 || !tagZero
    case 0x05: return datagram.count != 18 || datagram[17] != 1
    case 0x08:
      // Not of the confirmed session's id (0 reads as "none": no session has id 0, §12.8).
      return datagram.count != 25 || real.link.sessionID == 0
        || Array(datagram[1..<9]) != Self.bigEndian(real.link.sessionID)
    default: return true
    }
  }

  // MARK: - Steps

  /// Runs `body` on the session and its twin from the same random stream, then checks.
  mutating func step(_ body: (inout Subject, Instant) -> Void) {
    // The keys a DATA of this step may go under: those held before it (a LEAVE or LOGOUT
    // goes under the session's keys, which are then forgotten) or after it.
    let idsBefore = [confirmID, real.link.sessionID]
    let before = random.generator
    body(&real, now)
    let after = random.generator.state
    random.generator = before
    body(&twin, now)
    require(random.generator.state == after, "the twin drew other random bytes")
    require(
      real.output.datagrams == twin.output.datagrams,
      "the twin sent \(twin.output.datagrams), the session \(real.output.datagrams)")
    require(
      real.output.notifications == twin.output.notifications,
      "the twin reported \(twin.output.notifications), the session "
        + "\(real.output.notifications)")
    compareState()
    checkSent(idsBefore: idsBefore)
  }

  /// The session and its twin hold the same state (a datagram that changed nothing left
  /// nothing behind).
  func compareState() {
    require(
      real.session.state == twin.session.state,
      "state \(real.session.state), the twin's \(twin.session.state)")
    require(
      real.session.nextDeadline == twin.session.nextDeadline,
      "deadline \(String(describing: real.session.nextDeadline)), the twin's "
        + "\(String(describing: twin.session.nextDeadline))")
    require(
      real.link.sessionID == twin.link.sessionID,
      "session id \(real.link.sessionID), the twin's \(twin.link.sessionID)")
  }

  /// Moves the clock to `time`, firing every deadline on the way at its instant.
  mutating func run(until time: Instant) {
    while let due = real.session.nextDeadline, due <= time {
      guard firingsLeft > 0 else { return }
      firingsLeft -= 1
      require(due > now || now.nanoseconds == .max, "deadline \(due) not after now \(now)")
      now = due
      step { s, now in s.advance(to: now) }
    }
    now = time
  }

  /// Every datagram of the last step is one of version 2's device kinds, of its size.
  mutating func checkSent(idsBefore: [UInt64]) {
    for notification in real.output.notifications { trace("  reported \(notification)") }
    for datagram in real.output.datagrams {
      trace("  out: \(describe(datagram))")
      let b = datagram.startIndex
      switch datagram.first {
      case InitMessage.kind?:
        require(
          datagram.count == InitMessage.size && datagram[b + 1] == 2, "sent INIT \(datagram)")
        lastInit = Array(datagram)
        checkRequest(datagram)
      case ConfirmMessage.kind?:
        require(datagram.count == ConfirmMessage.size, "sent CONFIRM \(datagram)")
        confirmID = bigEndianValue(datagram[(b + 1)..<(b + 9)])
        // No edge issues id 0 (§12.8); the device refuses a RESPONSE that gives it.
        require(confirmID != 0, "sent a CONFIRM of session id 0")
      case SealedData<NullCipher>.kind?:
        checkData(datagram, ids: idsBefore + [confirmID, real.link.sessionID])
      default:
        fatalError("property violated: the device sent \(Array(datagram))")
      }
    }
  }

  /// The INIT's request, opened by the edge's half, is this session's.
  func checkRequest(_ datagram: ArraySlice<UInt8>) {
    guard let edge = NullEdge.opening(datagram, crypto: real.link.crypto) else {
      fatalError("property violated: the edge does not open the INIT \(Array(datagram))")
    }
    let request = edge.request
    let name = Session.isLogin ? Samples.user.bytes : Samples.channel.bytes
    require(
      request.kind
        == (Session.isLogin ? HandshakeRequest.loginKind : HandshakeRequest.channelKind)
        && request.appID == Samples.appID.bytes && request.name == name,
      "the INIT asks for \(request)")
  }

  /// A DATA the device sealed: a session id, a zero tag, a payload of this profile that the
  /// edge decodes, 42 bytes at least.
  func checkData(_ datagram: ArraySlice<UInt8>, ids: [UInt64]) {
    let b = datagram.startIndex
    guard let payload = NullEdge.payload(ofData: datagram), datagram.count >= 42,
      datagram.suffix(16).allSatisfy({ $0 == 0 })
    else { fatalError("property violated: the device sent DATA \(Array(datagram))") }
    // Under the keys of the last CONFIRM (held) or the confirmed ones, before or after.
    let id = bigEndianValue(datagram[(b + 1)..<(b + 9)])
    require(ids.contains(id), "DATA of session \(id), the sessions known: \(ids)")
    let sizes: [UInt8: Int] = [
      0x02: 42, 0x03: 42, 0x04: 253, 0x06: 46, 0x07: 42, 0x08: 107, 0x09: 42,
    ]
    let type = payload.first ?? 0
    require(
      Session.sentTypes.contains(type) && sizes[type] == datagram.count,
      "the device sent a DATA of \(datagram.count) bytes, payload type \(type)")
    require(
      DevicePayload(decoding: payload) != nil,
      "the edge does not decode the device's payload \(Array(payload))")
  }

  func bigEndianValue(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reduce(0) { $0 << 8 | UInt64($1) }
  }
}

// MARK: - The profiles

extension ChannelSession<SeededRandom>: LinkedProfile {
  static var isLogin: Bool { false }
  static var sentTypes: Set<UInt8> { [0x02, 0x03, 0x04, 0x09] }

  mutating func start(token: Token, now: Instant, into output: inout ChannelOutput) {
    _ = try? join(token: token, channel: Samples.channel, uid: 0, now: now, into: &output)
  }

  mutating func end(now: Instant, into output: inout ChannelOutput) {
    leave(now: now, into: &output)
  }

  mutating func renew(token: Token, now: Instant, into output: inout ChannelOutput) {
    _ = try? renewToken(token, now: now, into: &output)
  }

  mutating func other(_ selector: UInt8, now: Instant, into output: inout ChannelOutput) {
    switch selector % 3 {
    case 0: networkChanged(byUser: selector & 4 != 0, now: now, into: &output)
    case 1: endpointChanged(now: now, into: &output)
    default: endpointResolved(now: now, into: &output)
    }
  }

  /// ACCEPT, REFUSE and PRESENCE are the channel's own.
  static var messageKinds: UInt8 { 8 }

  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
    channelServerMessage(selector, &input)
  }
}

extension LoginSession<SeededRandom>: LinkedProfile {
  static var isLogin: Bool { true }
  static var sentTypes: Set<UInt8> { [0x04, 0x06, 0x07, 0x08, 0x09] }
  static let channels = ["lobby", "room-1", "x"].map {
    try! ChannelName(validating: Array($0.utf8))
  }

  mutating func start(token: Token, now: Instant, into output: inout LoginOutput) {
    _ = try? login(token: token, userID: Samples.user, now: now, into: &output)
  }

  mutating func end(now: Instant, into output: inout LoginOutput) {
    _ = try? logout(now: now, into: &output)
  }

  mutating func renew(token: Token, now: Instant, into output: inout LoginOutput) {
    _ = try? renewToken(token, now: now, into: &output)
  }

  mutating func other(_ selector: UInt8, now: Instant, into output: inout LoginOutput) {
    let channel = Self.channels[Int(selector >> 2) % Self.channels.count]
    switch selector % 3 {
    case 0: networkChanged(now: now, into: &output)
    case 1: _ = try? joinChannel(channel, now: now, into: &output)
    default: _ = try? leaveChannel(channel, now: now, into: &output)
    }
  }

  /// LOGIN_ACCEPT, LOGIN_REFUSE, MEMBER_EVENTS and CHANNEL_ACK are the login's own.
  static var messageKinds: UInt8 { 9 }

  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message {
    switch selector {
    case 0:
      return .loginAccept(
        LoginAccept(
          serverTimeMs: input.u64(), tokenTimeLeftMs: input.pick([0, 1, 45_000], orAny: true),
          resumed: input.bool(), session: input.pick([0, 1, 2], orAny: true)))
    case 1: return .loginRefuse(code: 1 + input.u8() % 8)
    case 3:
      var entries: [MemberEvent.Entry] = []
      for _ in 0..<Int(1 + input.u8() % 4) {
        entries.append(
          MemberEvent.Entry(
            kind: input.pick(MemberEvent.Kind.allCases), channel: input.pick(Self.channels),
            userID: input.bool() ? Samples.otherUser : Samples.user))
      }
      return .memberEvents(
        try! MemberEvents(
          session: input.pick([0, 1, 2], orAny: true),
          firstSequence: input.pick([0, 1, 2, 5], orAny: true), entries: entries))
    default:
      return .channelAck(
        session: input.pick([0, 1, 2], orAny: true), sequence: input.pick([0, 1, 2], orAny: true))
    }
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeLink(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked(LinkSeeds.all)
  return 0
}
