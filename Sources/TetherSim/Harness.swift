// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// One session of either profile on a virtual clock, talking to a server the test plays
/// by hand. Every notification and every sent packet is logged with the time it happened.
/// ``Harness`` drives a channel session, ``LoginHarness`` a login session; what is only a
/// profile's (its calls, its server's answers) is in their own extensions.
public struct SessionHarness<Session: HarnessedSession> {
  public var session: Session
  public var now: Instant = .zero
  public var log: [(at: Instant, notification: Session.Notification)] = []
  public var sent: [(at: Instant, packet: Packet)] = []
  /// Notifications and sent packets interleaved, in the order the session produced them.
  public var trace: [Traced] = []

  public enum Traced {
    case notified(Session.Notification)
    case sent(Packet)
  }
  private var output = SessionOutput<Session.Notification>()
  /// Protocol version 2's layer, when the session speaks it (the simulation's world gives
  /// one). The tests that play the server by hand have none: they hand the session its
  /// messages as ``Packet`` values (the sessions' own vocabulary under their cookie, what
  /// the layer carries in sealed DATA; never bytes on a wire). With it, ``sent`` and
  /// ``trace`` still hold what the session wrote (before the layer sealed it:
  /// ``RecordedSession``), and ``wire`` what went on the wire in the last step.
  public var secure: SecureLink<SimCrypto>?
  public private(set) var wire: [[UInt8]] = []
  /// Over version 2: the message the layer handed the session for the last datagram taken
  /// (nil: none, the layer kept it).
  public private(set) var handed: Message?

  public init(config: Session.Config = Session.harnessConfig, seed: UInt64 = 1) {
    session = try! Session(config: config, random: SeededRandom(seed: seed))
  }

  public var state: Session.State { session.state }
  public var reason: Session.Reason? { session.reason }

  /// The cookie of the current session (from the JOINs or LOGINs it sent).
  public var cookie: UInt64 {
    sent.last { Session.isAttempt($0.packet.message) }?.packet.cookie ?? 0
  }

  public var notifications: [Session.Notification] { log.map(\.notification) }

  /// Runs `body` against the session at the current time and logs what it produced.
  public mutating func step<T, E: Error>(
    _ body: (inout Session, Instant, inout SessionOutput<Session.Notification>) throws(E) -> T
  ) throws(E) -> T {
    output.removeAll()
    guard secure != nil else {
      defer { collect(RecordedSession<Session>.written(output, from: 0)) }
      return try body(&session, now, &output)
    }
    do throws(E) {
      let (result, wrote) = try SecureDriver.call(
        &session, link: &secure!, now: now, output: &output, body)
      collect(wrote)
      return result
    } catch {
      collect([])
      throw error
    }
  }

  /// A datagram from the edge reaches the session: through the layer, if it has one.
  public mutating func take(_ datagram: ArraySlice<UInt8>) {
    output.removeAll()
    guard secure != nil else {
      _ = session.receive(datagram: datagram, now: now, into: &output)
      collect(RecordedSession<Session>.written(output, from: 0))
      return
    }
    let (wrote, handed) = SecureDriver.receive(
      datagram, &session, link: &secure!, now: now, output: &output)
    self.handed = handed
    collect(wrote)
  }

  private mutating func collect(_ wrote: [SessionWrote<Session.Notification>]) {
    wire = output.datagrams.map { Array($0) }
    for item in wrote {
      switch item {
      case .notified(let n):
        log.append((now, n))
        trace.append(.notified(n))
      case .sent(let packet):
        sent.append((now, packet))
        trace.append(.sent(packet))
      case .undecodable(let bytes):
        preconditionFailure("the session sent bytes it cannot decode: \(bytes)")
      }
    }
  }

  public mutating func renew(_ token: Token = Fixture.token2) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  // MARK: - The server's side

  /// The server sends `message` with this session's cookie (or `cookie`).
  public mutating func deliver(_ message: Message, cookie: UInt64? = nil) {
    let bytes = Packet(cookie: cookie ?? self.cookie, message: message).encoded
    take(bytes[...])
  }

  /// The server answers every heartbeat sent since `mark` (as a live link would).
  public mutating func ackHeartbeats(since mark: Mark) {
    for message in sentMessages(since: mark) {
      if let sequence = Session.heartbeatSequence(message) {
        deliver(.heartbeatAck(sequence: sequence, serverTimeMs: 0))
      }
    }
  }

  // MARK: - Time

  /// Moves the clock to `time`, firing every deadline on the way at its exact instant.
  /// With `answering`, every heartbeat is acknowledged at once (a healthy link).
  public mutating func run(until time: Instant, answering: Bool = false) {
    var steps = 0
    while let due = session.nextDeadline, due <= time {
      steps += 1
      precondition(steps < 1_000_000, "the session keeps asking for the same deadline")
      precondition(due >= now, "deadline in the past")
      now = due
      let mark = self.mark
      step { s, now, out in s.advance(to: now, into: &out) }
      if answering { ackHeartbeats(since: mark) }
    }
    now = time
  }

  public mutating func run(for interval: Interval, answering: Bool = false) {
    run(until: now + interval, answering: answering)
  }

  // MARK: - Looking at the logs

  /// A point in the logs, to look at what came after it (even at the same instant).
  public struct Mark {
    public let log: Int
    public let sent: Int
    public let trace: Int
  }

  public var mark: Mark { Mark(log: log.count, sent: sent.count, trace: trace.count) }

  /// Everything but the attempt reports, which carry jittered times.
  public var mainNotifications: [Session.Notification] { mainNotifications() }

  /// As ``mainNotifications``, from `mark` on.
  public func mainNotifications(since mark: Mark? = nil) -> [Session.Notification] {
    log[(mark?.log ?? 0)...].map(\.notification).filter { !Session.isAttemptReport($0) }
  }

  /// As ``mainNotifications``, from `time` on.
  public func mainNotifications(since time: Instant) -> [Session.Notification] {
    log.filter { $0.at >= time && !Session.isAttemptReport($0.notification) }.map(\.notification)
  }

  public func sentMessages(since mark: Mark? = nil) -> [Message] {
    sent[(mark?.sent ?? 0)...].map(\.packet.message)
  }

  /// Messages sent at or after `time`.
  public func sentMessages(since time: Instant) -> [Message] {
    sent.filter { $0.at >= time }.map(\.packet.message)
  }

  /// When the first notification matching `match` was logged.
  public func time(of match: (Session.Notification) -> Bool) -> Instant? {
    log.first { match($0.notification) }?.at
  }

  public func time(of notification: Session.Notification) -> Instant? {
    time { $0 == notification }
  }
}

/// What a harness needs of a session: both profiles' sessions have it.
public protocol HarnessedSession: LinkSession where Notification: Equatable {
  associatedtype Config
  associatedtype State
  associatedtype Reason
  /// The config a harness uses unless told otherwise.
  static var harnessConfig: Config { get }
  init(config: Config, random: SeededRandom) throws(TetherError)
  var state: State { get }
  var reason: Reason? { get }
  var nextDeadline: Instant? { get }
  mutating func advance(to now: Instant, into output: inout SessionOutput<Notification>)
  mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout SessionOutput<Notification>
  ) -> WireError?
  mutating func renewToken(
    _ token: Token, now: Instant, into output: inout SessionOutput<Notification>
  ) throws(TetherError)
  /// A JOIN or LOGIN: what carries a new session's cookie first.
  static func isAttempt(_ message: Message) -> Bool
  /// An attempt's report, whose times are jittered (left out of the main notifications).
  static func isAttemptReport(_ notification: Notification) -> Bool
  /// The sequence number of a heartbeat of this profile.
  static func heartbeatSequence(_ message: Message) -> UInt32?
}

// MARK: - The channel profile

/// One channel session on a virtual clock.
public typealias Harness = SessionHarness<ChannelSession<SeededRandom>>

extension ChannelSession: HarnessedSession where Random == SeededRandom {
  public static var harnessConfig: ChannelConfig { Fixture.config }
  public static func isAttempt(_ message: Message) -> Bool {
    if case .join = message { true } else { false }
  }
  public static func isAttemptReport(_ notification: ChannelNotification) -> Bool {
    if case .joinAttempt = notification { true } else { false }
  }
  public static func heartbeatSequence(_ message: Message) -> UInt32? {
    if case .heartbeat(let sequence) = message { sequence } else { nil }
  }
}

extension SessionHarness where Session == ChannelSession<SeededRandom> {
  public mutating func join(uid: UInt32 = 0, token: Token = Fixture.token) throws(TetherError) {
    try step { s, now, out throws(TetherError) in
      try s.join(token: token, channel: Fixture.channel, uid: uid, now: now, into: &out)
    }
  }

  public mutating func leave() { step { s, now, out in s.leave(now: now, into: &out) } }

  public mutating func networkChanged(byUser: Bool) {
    step { s, now, out in s.networkChanged(byUser: byUser, now: now, into: &out) }
  }

  public mutating func endpointChanged() {
    step { s, now, out in s.endpointChanged(now: now, into: &out) }
  }

  public mutating func accept(uid: UInt32 = 42, tokenTimeLeftMs: UInt32 = 0) {
    deliver(
      .accept(
        JoinAccept(uid: uid, serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: false)))
  }

  public func joins(since mark: Mark) -> [JoinRequest] {
    sent[mark.sent...].compactMap { if case .join(let r) = $0.packet.message { r } else { nil } }
  }

  /// JOINs sent at or after `time`.
  public func joins(since time: Instant = .zero) -> [(at: Instant, request: JoinRequest)] {
    sent.filter { $0.at >= time }.compactMap {
      if case .join(let r) = $0.packet.message { ($0.at, r) } else { nil }
    }
  }

  /// State changes only, in order.
  public var stateChanges: [ChannelNotification] {
    notifications.filter { if case .connectionStateChanged = $0 { true } else { false } }
  }

  /// A CONNECTED session (joined at `now`, accepted 200 ms later).
  public static func connected(tokenTimeLeftMs: UInt32 = 0, config: ChannelConfig = Fixture.config)
    -> Harness
  {
    var h = Harness(config: config)
    try! h.join()
    h.run(for: .ms(200))
    h.accept(tokenTimeLeftMs: tokenTimeLeftMs)
    return h
  }
}
