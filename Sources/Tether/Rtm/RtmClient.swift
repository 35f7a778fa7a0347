import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One login client: the core's login session on a libev loop (``Connection`` does the
/// socket, the deadlines and the lifetime; ``RtmCallbacks`` the C callbacks of
/// `tether_rtm_handler`).
final class RtmClient: SessionConnection<LoginSession<BufferedRandom>, RtmCallbacks> {
  init(
    context: LoopContext, session: LoginSession<BufferedRandom>, callbacks: RtmCallbacks,
    endpoint: ServerEndpoint, socket: UDPSocket?
  ) {
    super.init(
      context: context, session: session, callbacks: callbacks, logger: callbacks.logger,
      endpoint: endpoint, socket: socket)
  }

  // A new socket or address, whatever the cause: a LOGIN at once (a RELOGIN while
  // CONNECTED, which moves the session to the new address).
  override func sessionNetworkChanged(byUser: Bool) {
    session.networkChanged(now: now, into: &output)
  }

  override func sessionEndpointChanged() { session.networkChanged(now: now, into: &output) }

  override func sessionEndpointResolved() { session.networkChanged(now: now, into: &output) }

  var publicStats: tether_engine_stats {
    publicStats(
      malformed: session.counters.malformed, foreign: session.counters.foreign,
      attempts: session.counters.loginAttempts)
  }
}
