#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One channel engine: the core's channel session on a libev loop (``Connection`` does the
/// socket, the deadlines and the lifetime; ``Callbacks`` the C callbacks of
/// `tether_engine_handler`).
typealias Engine = SessionConnection<ChannelSession<BufferedRandom>, Callbacks>

extension SessionConnection where Session == ChannelSession<BufferedRandom>, Sink == Callbacks {
  convenience init(
    context: LoopContext, session: consuming ChannelSession<BufferedRandom>,
    callbacks: Callbacks, endpoint: ServerEndpoint, socket: ConnectedUDPSocket?
  ) {
    self.init(
      context: context, session: consume session, callbacks: callbacks, logger: callbacks.logger,
      endpoint: endpoint, socket: socket)
  }
}
