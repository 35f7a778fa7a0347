import TetherCore

/// One channel session on a virtual clock, talking to a server the test plays by hand.
/// Every notification and every sent packet is logged with the time it happened.
public struct Harness {
  public var session: ChannelSession<SeededRandom>
  public var now: Instant = .zero
  public var log: [(at: Instant, notification: ChannelNotification)] = []
  public var sent: [(at: Instant, packet: Packet)] = []
  /// Notifications and sent packets interleaved, in the order the session produced them.
  public var trace: [Traced] = []

  public enum Traced {
    case notified(ChannelNotification)
    case sent(Packet)
  }
  private var output = ChannelOutput()

  public init(config: ChannelConfig = Fixture.config, seed: UInt64 = 1) {
    session = try! ChannelSession(config: config, random: SeededRandom(seed: seed))
  }

  public var state: ConnectionState { session.state }
  public var reason: ConnectionChangedReason? { session.reason }
  /// The cookie of the current join (from the JOINs it sent).
  public var cookie: UInt64 {
    sent.last { if case .join = $0.packet.message { true } else { false } }?.packet.cookie ?? 0
  }
  public var notifications: [ChannelNotification] { log.map(\.notification) }

  /// Runs `body` against the session at the current time and logs what it produced.
  public mutating func step<T, E: Error>(
    _ body: (inout ChannelSession<SeededRandom>, Instant, inout ChannelOutput) throws(E) -> T
  ) throws(E) -> T {
    output.removeAll()
    defer { collect() }
    return try body(&session, now, &output)
  }

  private mutating func collect() {
    for action in output.actions {
      switch action {
      case .notify(let n):
        log.append((now, n))
        trace.append(.notified(n))
      case .send(let d):
        // The session only sends what it can encode and decode.
        let packet = try! Packet.decode(output.bytes(of: d))
        sent.append((now, packet))
        trace.append(.sent(packet))
      }
    }
  }

  public mutating func join(uid: UInt32 = 0, token: Token = Fixture.token) throws(TetherError) {
    try step { s, now, out throws(TetherError) in
      try s.join(token: token, channel: Fixture.channel, uid: uid, now: now, into: &out)
    }
  }

  public mutating func leave() { step { s, now, out in s.leave(now: now, into: &out) } }

  public mutating func renew(_ token: Token = Fixture.token2) throws(TetherError) {
    try step { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  public mutating func networkChanged(byUser: Bool) {
    step { s, now, out in s.networkChanged(byUser: byUser, now: now, into: &out) }
  }

  public mutating func endpointChanged() {
    step { s, now, out in s.endpointChanged(now: now, into: &out) }
  }

  /// The server sends `message` with this session's cookie (or `cookie`).
  public mutating func deliver(_ message: Message, cookie: UInt64? = nil) {
    let packet = Packet(cookie: cookie ?? self.cookie, message: message)
    let bytes = packet.encoded
    step { s, now, out in _ = s.receive(datagram: bytes[...], now: now, into: &out) }
  }

  public mutating func accept(uid: UInt32 = 42, tokenTimeLeftMs: UInt32 = 0) {
    deliver(
      .accept(
        JoinAccept(uid: uid, serverTimeMs: 0, tokenTimeLeftMs: tokenTimeLeftMs, resumed: false)))
  }

  /// Moves the clock to `time`, firing every deadline on the way at its exact instant.
  public mutating func run(until time: Instant) {
    var steps = 0
    while let due = session.nextDeadline, due <= time {
      steps += 1
      precondition(steps < 1_000_000, "the session keeps asking for the same deadline")
      precondition(due >= now, "deadline in the past")
      now = due
      step { s, now, out in s.advance(to: now, into: &out) }
    }
    now = time
  }

  public mutating func run(for interval: Interval) { run(until: now + interval) }

  /// Notifications logged at or after `time`.
  public func notifications(since time: Instant) -> [ChannelNotification] {
    log.filter { $0.at >= time }.map(\.notification)
  }

  /// When the first notification matching `match` was logged.
  public func time(of match: (ChannelNotification) -> Bool) -> Instant? {
    log.first { match($0.notification) }?.at
  }

  public func time(of notification: ChannelNotification) -> Instant? { time { $0 == notification } }

  /// A point in the logs, to look at what came after it (even at the same instant).
  public struct Mark {
    public let log: Int
    public let sent: Int
    public let trace: Int
  }

  public var mark: Mark { Mark(log: log.count, sent: sent.count, trace: trace.count) }

  public func mainNotifications(since mark: Mark) -> [ChannelNotification] {
    log[mark.log...].map(\.notification).filter {
      if case .joinAttempt = $0 { false } else { true }
    }
  }

  public func sentMessages(since mark: Mark) -> [Message] {
    sent[mark.sent...].map(\.packet.message)
  }

  public func joins(since mark: Mark) -> [JoinRequest] {
    sent[mark.sent...].compactMap { if case .join(let r) = $0.packet.message { r } else { nil } }
  }

  /// Everything but the join-attempt reports, which carry jittered times.
  public var mainNotifications: [ChannelNotification] {
    notifications.filter { if case .joinAttempt = $0 { false } else { true } }
  }

  public func mainNotifications(since time: Instant) -> [ChannelNotification] {
    notifications(since: time).filter { if case .joinAttempt = $0 { false } else { true } }
  }

  /// Messages sent at or after `time`.
  public func sentMessages(since time: Instant = .zero) -> [Message] {
    sent.filter { $0.at >= time }.map(\.packet.message)
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
