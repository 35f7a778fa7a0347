import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

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
    endpoint: ServerEndpoint, socket: ConnectedUDPSocket?
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

  // MARK: - Hooks of Connection

  override func receiveDatagram(_ datagram: ArraySlice<UInt8>, at arrival: Instant) -> WireError? {
    session.receive(datagram: datagram, now: arrival, into: &output)
  }

  // Through an inout parameter: a getter called on the stored property copied the whole
  // session first (hundreds of bytes, and a retain of each of its arrays).
  override var sessionDeadlineWindow: DeadlineWindow? { Self.window(of: &session) }

  private static func window(of session: inout Session) -> DeadlineWindow? {
    session.nextDeadlineWindow
  }

  override var sessionCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    Self.counters(of: &session)
  }

  private static func counters(of session: inout Session) -> (
    malformed: UInt64, foreign: UInt64, attempts: UInt64
  ) { session.trafficCounters }

  override func advanceSession(to now: Instant) { session.advance(to: now, into: &output) }

  override var actionCount: Int { output.actions.count }

  override func action(at index: Int, delivering: Bool) -> ArraySlice<UInt8>? {
    switch output.actions[index] {
    case .send(let datagram): return output.bytes(of: datagram)
    case .notify(let notification):
      if delivering { callbacks.deliver(notification, from: self) }
      return nil
    }
  }

  override func removeActions() { output.removeAll() }
}
