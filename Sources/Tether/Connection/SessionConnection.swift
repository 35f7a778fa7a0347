import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// A core session a ``SessionConnection`` drives: the channel session and the login
/// session both are. Each says how it takes a change of network or server, and what it
/// counted.
protocol DrivenSession {
  associatedtype Notification
  var nextDeadlineWindow: DeadlineWindow? { get }
  mutating func advance(to now: Instant, into output: inout SessionOutput<Notification>)
  mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout SessionOutput<Notification>
  ) -> WireError?
  /// The device's network changed (after the connection made a fresh socket).
  mutating func networkChanged(
    byUser: Bool, now: Instant, into output: inout SessionOutput<Notification>)
  /// The app switched to another endpoint (after the new socket or look-up).
  mutating func endpointChanged(now: Instant, into output: inout SessionOutput<Notification>)
  /// A looked-up name gave a new address (after the new socket).
  mutating func endpointResolved(now: Instant, into output: inout SessionOutput<Notification>)
  /// Datagrams that did not decode, datagrams of another session, and attempts sent.
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) { get }
}

extension ChannelSession: DrivenSession {
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    (counters.malformed, counters.foreign, counters.joinAttempts)
  }
}

extension LoginSession: DrivenSession {
  // A new socket or address, whatever the cause: a LOGIN at once (a RELOGIN while
  // CONNECTED, which moves the session to the new address).
  mutating func networkChanged(byUser: Bool, now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  mutating func endpointChanged(now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  mutating func endpointResolved(now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    (counters.malformed, counters.foreign, counters.loginAttempts)
  }
}

/// The app's callbacks of one profile: what turns each notification into a C call.
protocol NotificationSink {
  associatedtype Notification
  /// Calls the app's callback for `notification`, coming from `connection`.
  func deliver(_ notification: Notification, from connection: Connection)
}

/// A connection with its profile's session and output: performing the session's actions,
/// datagrams and C callbacks, in the order the session produced them, except when
/// deadlines fire together: then every connection's callbacks come first, and the
/// datagrams set aside go out when ``flush(rescheduling:)`` next runs. The `Sink` (the
/// profile's callbacks) delivers each notification. One class per profile (``Engine``,
/// ``RtmClient``): no subclass of its own, so each profile costs one class's metadata.
final class SessionConnection<Session: DrivenSession, Sink: NotificationSink>: Connection
where Sink.Notification == Session.Notification {
  var session: Session
  var output = SessionOutput<Session.Notification>()
  let callbacks: Sink

  init(
    context: LoopContext, session: consuming Session, callbacks: Sink, logger: Logger,
    endpoint: ServerEndpoint, socket: UDPSocket?
  ) {
    self.session = consume session
    self.callbacks = callbacks
    super.init(context: context, logger: logger, endpoint: endpoint, socket: socket)
  }

  override func sessionNetworkChanged(byUser: Bool) {
    session.networkChanged(byUser: byUser, now: now, into: &output)
  }

  override func sessionEndpointChanged() { session.endpointChanged(now: now, into: &output) }

  override func sessionEndpointResolved() { session.endpointResolved(now: now, into: &output) }

  /// The figures of `tether_engine_get_stats` and `tether_rtm_client_get_stats`.
  var publicStats: tether_engine_stats {
    let counted = session.trafficCounters
    return publicStats(
      malformed: counted.malformed, foreign: counted.foreign, attempts: counted.attempts)
  }

  // MARK: - Hooks of Connection

  override func receiveDatagram(_ datagram: ArraySlice<UInt8>, at arrival: Instant) -> WireError? {
    session.receive(datagram: datagram, now: arrival, into: &output)
  }

  override var sessionDeadlineWindow: DeadlineWindow? { session.nextDeadlineWindow }

  override func advanceSession(to now: Instant) { session.advance(to: now, into: &output) }

  /// Performs every queued action in order (datagrams set aside first), then, unless told
  /// not to, tells the loop the next deadline. A call made from a callback lands here too
  /// and returns at once: the outer loop performs its actions.
  override func flush(rescheduling: Bool) {
    guard !dispatching else { return }
    dispatching = true
    sendSetAside()
    while cursor < output.actions.count && !destroyed {
      let action = output.actions[cursor]
      cursor += 1
      switch action {
      case .send(let datagram): send(output.bytes(of: datagram))
      case .notify(let notification): deliverUnlessSilenced(notification)
      }
    }
    if !destroyed { clearOutput() }
    dispatching = false
    if rescheduling && !destroyed { reschedule() }
  }

  override func deliverNotifications() {
    guard !dispatching else { return }
    dispatching = true
    while cursor < output.actions.count && !destroyed {
      let action = output.actions[cursor]
      cursor += 1
      switch action {
      case .send: sendsSetAside = true
      case .notify(let notification): deliverUnlessSilenced(notification)
      }
    }
    dispatching = false
  }

  /// At destroy: the datagrams the session had already produced still go out (a LEAVE
  /// or LOGOUT from a call just before, in the same callback); the notifications not yet
  /// delivered never are.
  override func sendUndelivered() {
    sendSetAside()
    while cursor < output.actions.count {
      if case .send(let datagram) = output.actions[cursor] { send(output.bytes(of: datagram)) }
      cursor += 1
    }
    clearOutput()
  }

  // MARK: - Delivery

  /// The app left (or logged out) from inside a callback: what was queued before and is
  /// not delivered yet never is (tether.h: nothing after leave or logout until the next
  /// join or login but their own callbacks). Its datagrams still go out. `end`: how many
  /// actions were queued before the call, when the call has already added its own.
  func silenceUndelivered(before end: Int? = nil) {
    if dispatching { silencedBefore = end ?? output.actions.count }
  }

  private func sendSetAside() {
    guard sendsSetAside else { return }
    sendsSetAside = false
    for action in output.actions[..<cursor] {
      if case .send(let datagram) = action { send(output.bytes(of: datagram)) }
    }
  }

  private func clearOutput() {
    output.removeAll()
    cursor = 0
    sendsSetAside = false
    silencedBefore = 0
  }

  /// `cursor` has moved past the action being delivered.
  private func deliverUnlessSilenced(_ notification: Session.Notification) {
    if cursor > silencedBefore { callbacks.deliver(notification, from: self) }
  }
}
