// SPDX-License-Identifier: Apache-2.0
#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
  import TetherSodium
#endif

/// The profile's half of a connection: its core session, the session's output and the
/// app's callbacks, behind the few calls a ``Connection`` makes. A connection holds one and
/// never knows which: the channel profile's (``ChannelProfile``) or the login profile's
/// (``LoginProfile``).
///
/// A class each profile overrides, because that is the dispatch Embedded Swift gives at no
/// cost: it has no existential to spare (a class-bound `any` costs about 2 KB of text), and
/// a connection generic over its session would be one copy per profile. This way the
/// connection's code (lifecycle, socket, deadlines, delivery) exists once, and each
/// profile's code only in the member of libtether.a that the profile's functions reach.
class Profile {
  /// Protocol version 2 between the session and the socket (docs/PROTOCOL.md §12.10). Held
  /// here, not in the generic subclass, so that what only it is touched by (its storage,
  /// counters and clock) is one copy for both profiles.
  final var link = SecureLink(crypto: SodiumCrypto())
  /// How many of the output's actions the link has rewritten already.
  final var secured = 0

  /// Hands one datagram to the session through the version 2 layer; what to log if the
  /// layer dropped it.
  final func receive(_ datagram: ArraySlice<UInt8>, at arrival: Instant) -> StaticString? {
    secure(now: arrival)
    let before = secureCounters
    link.unixTime = System.unixSeconds(at: arrival)
    receiveSecured(datagram, at: arrival)
    return droppedLine(before: before, after: secureCounters, state: stateValue)
  }
  /// ``receive(_:at:)``'s own part: the datagram through the layer into the session.
  func receiveSecured(_ datagram: ArraySlice<UInt8>, at arrival: Instant) {}
  /// The session's next deadline window.
  var deadlineWindow: DeadlineWindow? { nil }
  /// Runs what is due in the session by `now`.
  func advance(to now: Instant) {}
  /// The device's network changed (after the connection made a fresh socket).
  func networkChanged(byUser: Bool, now: Instant) {}
  /// The app switched to another endpoint (after the new socket or look-up).
  func endpointChanged(now: Instant) {}
  /// A looked-up name gave a new address (after the new socket).
  func endpointResolved(now: Instant) {}
  /// Datagrams that did not decode, datagrams of another session, and attempts sent.
  var counters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) { (0, 0, 0) }
  /// How many actions the session's output holds.
  var actionCount: Int { 0 }
  /// Action `index` of the session's output: the bytes to send if it is a datagram; nil
  /// for a notification, which is delivered (the app's callback called) if `delivering`.
  func action(at index: Int, delivering: Bool, for connection: Connection) -> ArraySlice<UInt8>? {
    nil
  }
  /// Empties the session's output, keeping its storage.
  func removeActions() {}
  /// Rewrites what the session queued since the last call into protocol version 2's
  /// datagrams (``SecureLink/secure(_:from:session:now:)``): called before any action is
  /// performed, so every entry point of the session (the app's calls, a callback's, a
  /// deadline's) is sealed the same way, in one place.
  final func secure(now: Instant) {
    guard hasUnsecured else { return }
    link.unixTime = System.unixSeconds(at: now)
    secureSession(now: now)
  }
  /// The layer's rewrite of the session's output from ``secured`` on, then ``secured``
  /// moved to its end.
  func secureSession(now: Instant) {}
  /// Whether the session queued actions ``secure(now:)`` has not rewritten yet.
  final var hasUnsecured: Bool { secured < actionCount }
  /// Datagrams the version 2 layer dropped: (unopened, replayed, dropped).
  final var secureCounters: (unopened: UInt64, replayed: UInt64, dropped: UInt64) {
    (link.unopened, link.replayed, link.dropped)
  }
  /// Hands the session a new token (`tether_renew_token`, `tether_rtm_renew_token`).
  func renewToken(_ token: Token, now: Instant) throws(TetherError) {}
  /// The raw value of the session's state: the C enum's.
  var stateValue: Int32 { 1 }
}

/// What to log for a datagram the version 2 layer took, from its counters before and after
/// and the session's state: nil if it dropped nothing worth a line. Not generic: one copy
/// for both profiles.
@inline(never)
func droppedLine(
  before: (unopened: UInt64, replayed: UInt64, dropped: UInt64),
  after: (unopened: UInt64, replayed: UInt64, dropped: UInt64), state: Int32
) -> StaticString? {
  if after.unopened != before.unopened { return "dropped a datagram: did not open" }
  if after.replayed != before.replayed { return "dropped a datagram: replayed or too old" }
  // Anything else the layer drops is logged only while a session is under way (2 … 4:
  // CONNECTING, CONNECTED, RECONNECTING): after a leave or logout the app hears nothing
  // but that call's own callbacks (tether.h), and what the edge still sends then is for
  // no session, as version 1's datagrams under an old cookie were.
  if after.dropped != before.dropped, (2...4).contains(state) {
    return "dropped a datagram: not for this session"
  }
  return nil
}

/// What the functions both profiles share ask of either session, beside what the
/// connection asks (``DrivenSession``).
protocol CallableSession: DrivenSession, LinkSession {
  associatedtype State: RawRepresentable where State.RawValue == Int32
  var state: State { get }
  mutating func renewToken(
    _ token: Token, now: Instant, into output: inout SessionOutput<Notification>
  ) throws(TetherError)
}

extension ChannelSession: CallableSession {}
extension LoginSession: CallableSession {}

/// The app's callbacks of one profile: what turns each notification into a C call.
protocol NotificationSink {
  /// Calls the app's callback for `kept`, coming from `connection`, if it is one of this
  /// profile's notifications (a session's output holds no other).
  func deliver(_ kept: OutputNotification, from connection: Connection)
}

/// A profile made of a core session and the app's callbacks (`Sink`): one class per
/// profile, and no code but the session's calls.
final class SessionProfile<Session: CallableSession, Sink: NotificationSink>: Profile {
  var session: Session
  var output = SessionOutput<Session.Notification>()
  let callbacks: Sink

  init(session: consuming Session, callbacks: Sink) {
    self.session = consume session
    self.callbacks = callbacks
  }

  override func receiveSecured(_ datagram: ArraySlice<UInt8>, at arrival: Instant) {
    link.receive(datagram, session: &session, now: arrival, into: &output)
    secured = output.actionCount
  }

  override func secureSession(now: Instant) {
    link.secure(&output, from: secured, session: &session, now: now)
    secured = output.actionCount
  }

  // Through an inout parameter and a mutating call, so the session is read in place, not
  // copied first (a getter of the session copied it).
  override var deadlineWindow: DeadlineWindow? { Self.window(of: &session) }

  private static func window(of session: inout Session) -> DeadlineWindow? {
    session.windowInPlace()
  }

  override func advance(to now: Instant) {
    session.advance(to: now, into: &output)
    // Past a rekey limit the link starts a handshake on its own: checked after every
    // entry point, even one that queued nothing.
    secureSession(now: now)
  }

  override func networkChanged(byUser: Bool, now: Instant) {
    session.networkChanged(byUser: byUser, now: now, into: &output)
  }

  override func endpointChanged(now: Instant) { session.endpointChanged(now: now, into: &output) }

  override func endpointResolved(now: Instant) { session.endpointResolved(now: now, into: &output) }

  override var counters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    session.trafficCounters
  }

  override var actionCount: Int { output.actionCount }

  override func action(at index: Int, delivering: Bool, for connection: Connection)
    -> ArraySlice<UInt8>?
  {
    if let bytes = output.datagram(at: index) { return bytes }
    if delivering, let kept = output.keptNotification(at: index) {
      callbacks.deliver(kept, from: connection)
    }
    return nil
  }

  override func removeActions() {
    output.removeAll()
    secured = 0
  }

  override func renewToken(_ token: Token, now: Instant) throws(TetherError) {
    try session.renewToken(token, now: now, into: &output)
  }

  override var stateValue: Int32 { session.state.rawValue }
}

/// The channel profile: the core's channel session and the app's `tether_engine_handler`.
typealias ChannelProfile = SessionProfile<ChannelSession<BufferedRandom>, ChannelCallbacks>

/// The login profile: the core's login session and the app's `tether_rtm_handler`.
typealias LoginProfile = SessionProfile<LoginSession<BufferedRandom>, LoginCallbacks>
