#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One login client: the core's login session on a libev loop (``Connection`` does the
/// socket, the deadlines and the lifetime; ``RtmCallbacks`` the C callbacks of
/// `tether_rtm_handler`).
typealias RtmClient = SessionConnection<LoginSession<BufferedRandom>, RtmCallbacks>

extension SessionConnection where Session == LoginSession<BufferedRandom>, Sink == RtmCallbacks {
  convenience init(
    context: LoopContext, session: consuming LoginSession<BufferedRandom>,
    callbacks: RtmCallbacks, endpoint: ServerEndpoint, socket: ConnectedUDPSocket?
  ) {
    self.init(
      context: context, session: consume session, callbacks: callbacks, logger: callbacks.logger,
      endpoint: endpoint, socket: socket)
  }
}
