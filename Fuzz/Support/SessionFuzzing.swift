// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What fuzz-session and fuzz-login share: a session of their profile on a virtual clock,
/// driven by the input (datagrams, clock advances, the app's calls), with the profile's
/// properties checked after every entry point. A driver supplies the session, its calls,
/// its own server messages and its checks; the datagrams, the clock and the steps are run
/// here, once for both.
protocol SessionFuzzer {
  associatedtype Session: FuzzedSession
  /// The session, and what its last step produced.
  var subject: SessionUnderTest<Session> { get set }
  var now: Instant { get set }
  /// The cookie of the current session (from its JOINs or LOGINs), 0 before the first.
  var cookie: UInt64 { get }
  /// Deadlines this input may still fire: a config with retries milliseconds apart and a
  /// give-up days away fires millions, legitimately; the input stops there (a cost cap,
  /// not a property: each firing is checked to move time forward).
  var firingsLeft: Int { get set }
  /// The driver of `session`, made as the input's opening says (``opening(_:)``).
  init(session: Session)
  /// The profile's start call with valid arguments (join, login); `flags` are the
  /// opening's.
  mutating func start(flags: UInt8)
  /// The profile's accept (ACCEPT, LOGIN_ACCEPT) with the token `tokenTimeLeftMs` from now.
  static func accept(tokenTimeLeftMs: UInt32) -> Message
  /// Performs the next operation the input asks for.
  mutating func perform(_ input: inout FuzzInput)
  /// How many kinds of server message ``serverMessage(_:)`` builds: those both profiles
  /// take (``Samples/serverMessage(_:kinds:own:)``) and the profile's own.
  static var messageKinds: UInt8 { get }
  /// The profile's own server message for `selector`, its fields read from the input.
  static func ownMessage(_ selector: UInt8, _ input: inout FuzzInput) -> Message
  /// Checks the profile's properties after `step`, which began in state `before`, on
  /// ``output``.
  mutating func check(before: Session.State, _ step: FuzzStep)
}

/// The session a fuzzer drives and what its last step produced, in one value, so that a
/// step hands both to the session at once.
struct SessionUnderTest<Session: FuzzedSession> {
  typealias Output = SessionOutput<Session.Notification>
  var session: Session
  var output = Output()

  /// Runs `body` on the session at `now`, into an emptied output.
  mutating func step<T>(at now: Instant, _ body: (inout Session, Instant, inout Output) -> T) -> T {
    output.removeAll()
    return body(&session, now, &output)
  }
}

/// A step of a run, as a profile's checks see it.
enum FuzzStep {
  /// A datagram handed to the session, and what it decodes to (nil: it does not).
  case datagram(Packet?)
  case advance
  /// The profile's start call (join, login), and whether it returned success.
  case start(succeeded: Bool)
  /// Its end call (leave, logout), and whether it returned success.
  case end(succeeded: Bool)
  /// Any other call.
  case call
}

/// What a fuzzer needs of a session: both profiles' sessions have it.
protocol FuzzedSession {
  associatedtype Config: FuzzedConfig
  associatedtype Notification
  associatedtype State
  init(config: Config, random: SeededRandom) throws(TetherError)
  var state: State { get }
  var nextDeadline: Instant? { get }
  mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout SessionOutput<Notification>
  ) -> WireError?
  mutating func advance(to now: Instant, into output: inout SessionOutput<Notification>)
}

/// What a fuzzer needs of a config: both profiles' share the link's part.
protocol FuzzedConfig {
  init(appID: AppID)
  var interruptedAfter: Interval { get set }
  var heartbeatInterval: Interval { get set }
  var retry: RetryPolicy { get set }
  /// Reads the profile's own thresholds (``read(_:)``).
  mutating func readOwn(_ input: inout FuzzInput)
}

extension FuzzedConfig {
  /// The config's fields as an input gives them, each in milliseconds: the link's
  /// (interrupted after, heartbeat interval, retry base and cap, 16 bits each), then the
  /// profile's own (``readOwn(_:)``).
  mutating func read(_ input: inout FuzzInput) {
    interruptedAfter = .milliseconds(UInt64(input.u16()))
    heartbeatInterval = .milliseconds(UInt64(input.u16()))
    retry = RetryPolicy(
      base: .milliseconds(UInt64(input.u16())), cap: .milliseconds(UInt64(input.u16())))
    readOwn(&input)
  }
}

extension ChannelSession<SeededRandom>: FuzzedSession {}
extension LoginSession<SeededRandom>: FuzzedSession {}

extension ChannelConfig: FuzzedConfig {
  /// Lost after, remote offline after, give up after (32 bits), token will expire before.
  mutating func readOwn(_ input: inout FuzzInput) {
    lostAfter = .milliseconds(UInt64(input.u16()))
    remoteOfflineAfter = .milliseconds(UInt64(input.u16()))
    giveUpAfter = .milliseconds(UInt64(input.u32()))
    tokenWillExpireBefore = .milliseconds(UInt64(input.u16()))
  }
}

extension LoginConfig: FuzzedConfig {
  /// The login timeout.
  mutating func readOwn(_ input: inout FuzzInput) {
    loginTimeout = .milliseconds(UInt64(input.u16()))
  }
}

extension SessionFuzzer {
  typealias Output = SessionOutput<Session.Notification>

  // Borrowed, not copied: the checks read them after every step.
  var session: Session { _read { yield subject.session } }
  var output: Output { _read { yield subject.output } }

  /// One input: its opening, then operations until it ends (or its caps are reached).
  static func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    guard var driver = opening(&input) else { return 0 }
    var operations = 0
    while !input.isEmpty && operations < 512 && driver.firingsLeft > 0 {
      operations += 1
      driver.perform(&input)
    }
    return 0
  }

  /// The opening of an input, as ``SeedProgram`` writes it: flags, the config's fields
  /// (``FuzzedConfig/read(_:)``) when flag 1 is set, the generator's seed. The driver then
  /// makes the start call and, unless flag 4 is set, the server accepts (the token expires
  /// 45 s later with flag 8, never without). Nil for a config the session refuses.
  static func opening(_ input: inout FuzzInput) -> Self? {
    var config = Session.Config(appID: Samples.appID)
    let flags = input.u8()
    if flags & 1 == 1 { config.read(&input) }
    guard let session = try? Session(config: config, random: SeededRandom(seed: input.u64()))
    else { return nil }
    var driver = Self(session: session)
    driver.start(flags: flags)
    if flags & 4 == 0 { driver.deliver(accept(tokenTimeLeftMs: flags & 8 == 0 ? 0 : 45_000)) }
    return driver
  }

  /// Runs `body` on the session at `now`, then checks the properties on what it produced,
  /// as the step `kind` makes of its result.
  @discardableResult
  mutating func step<T>(
    _ kind: (T) -> FuzzStep, _ body: (inout Session, Instant, inout Output) -> T
  ) -> T {
    let before = session.state
    let result = subject.step(at: now, body)
    check(before: before, kind(result))
    return result
  }

  /// A call other than the start and the end.
  mutating func call(_ body: (inout Session, Instant, inout Output) -> Void) {
    step({ _ in .call }, body)
  }

  /// Hands `bytes` to the session (`decoded` is what they decode to) and checks the
  /// properties; returns what receive returned.
  mutating func receive(_ bytes: [UInt8], decoded: Packet?) -> WireError? {
    step({ _ in .datagram(decoded) }) { s, now, out in
      s.receive(datagram: bytes[...], now: now, into: &out)
    }
  }

  /// Runs the session's deadlines due by `now` and checks the properties.
  mutating func advance() {
    step({ _ in .advance }) { s, now, out in s.advance(to: now, into: &out) }
  }

  /// A server → client message built from the input's fields (the encoder only writes
  /// valid ones: this reaches the states raw bytes rarely do).
  static func serverMessage(_ input: inout FuzzInput) -> Message {
    Samples.serverMessage(&input, kinds: messageKinds, own: ownMessage)
  }

  /// A datagram of the input's bytes, as they come.
  mutating func deliverRaw(_ input: inout FuzzInput) {
    deliver(input.bytes(Int(input.u16() % 1300)))
  }

  /// A datagram of the input's bytes with this session's cookie patched in, so that the
  /// mutator's bytes reach the session rather than its cookie check.
  mutating func deliverOwnCookie(_ input: inout FuzzInput) {
    var bytes = input.bytes(Int(input.u16() % 1300))
    if bytes.count >= Packet.headerSize {
      for index in 4..<Packet.headerSize {
        bytes[index] = UInt8(truncatingIfNeeded: cookie >> UInt64(8 * (11 - index)))
      }
    }
    deliver(bytes)
  }

  /// `message` from the server, with this session's cookie.
  mutating func deliver(_ message: Message) {
    deliver(Packet(cookie: cookie, message: message).encoded)
  }

  /// A datagram that decodes re-encodes to the same bytes; receive and decode agree.
  mutating func deliver(_ bytes: [UInt8]) {
    let decoded = try? Packet.decode(bytes[...])
    if let decoded {
      require(decoded.encoded == bytes, "decode then encode changed \(bytes)")
    }
    let error = receive(bytes, decoded: decoded)
    require((error == nil) == (decoded != nil), "receive and decode disagree on \(bytes)")
  }

  /// Moves the clock by the input's length of time, firing every deadline on the way.
  mutating func wait(_ input: inout FuzzInput) {
    run(until: now + .milliseconds(input.milliseconds()))
  }

  /// Moves the clock to the session's next deadline, if it has one, and fires it.
  mutating func runToDeadline() {
    if let due = session.nextDeadline { run(until: due) }
  }

  /// Moves the clock to `time`, firing every deadline on the way at its instant.
  mutating func run(until time: Instant) {
    while let due = session.nextDeadline, due <= time {
      guard firingsLeft > 0 else { return }
      firingsLeft -= 1
      require(due > now || now.nanoseconds == .max, "deadline \(due) not after now \(now)")
      now = due
      advance()
    }
    now = time
  }
}
