#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// One channel engine: the core's channel session on a libev loop (``Connection`` does the
/// socket, the deadlines and the lifetime; ``Callbacks`` the C callbacks of
/// `tether_engine_handler`).
final class Engine: SessionConnection<ChannelSession<BufferedRandom>, Callbacks> {
  init(
    context: LoopContext, session: ChannelSession<BufferedRandom>, callbacks: Callbacks,
    endpoint: ServerEndpoint, socket: UDPSocket?
  ) {
    super.init(
      context: context, session: session, callbacks: callbacks, logger: callbacks.logger,
      endpoint: endpoint, socket: socket)
  }

  override func sessionNetworkChanged(byUser: Bool) {
    session.networkChanged(byUser: byUser, now: now, into: &output)
  }

  override func sessionEndpointChanged() { session.endpointChanged(now: now, into: &output) }

  override func sessionEndpointResolved() { session.endpointResolved(now: now, into: &output) }
}
