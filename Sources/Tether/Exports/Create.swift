import CLibev
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// What tether_engine_create and tether_rtm_client_create share, once each has read its
/// config and made its profile (its session and the app's callbacks): the server's
/// endpoint, the loop, the socket, and the connection started and handed to the app
/// through `out` (a `tether_engine **` or a `tether_rtm_client **`, set to NULL first by
/// the caller). Returns 0, or the code tether.h lists for create.
func create(
  _ profile: Profile, logger: Logger, loop: OpaquePointer?, server: UnsafePointer<CChar>?,
  out: UnsafeMutableRawPointer
) -> Int32 {
  guard let endpoint = serverEndpoint(server) else { return TetherError.invalidArgument.rawValue }
  guard let loop = loop ?? tether_ev_default_loop() else { return TetherError.failed.rawValue }
  var socket: ConnectedUDPSocket?
  if let address = endpoint.address {
    // A name has no socket until its look-up answers.
    socket = ConnectedUDPSocket(connectedTo: address)
    guard socket != nil else {
      logger.log(.error, "create: no UDP socket, errno", Int64(System.errno))
      return TetherError.failed.rawValue
    }
  }
  let connection = Connection(
    context: LoopRegistry.context(of: loop), profile: profile, logger: logger,
    endpoint: endpoint, socket: socket)
  let handle = Unmanaged.passRetained(connection)
  guard connection.start() else {
    // The look-up could not start (logged): nothing is left behind.
    connection.shutDown()
    connection.lifecycle = .released
    handle.release()
    return TetherError.failed.rawValue
  }
  out.storeBytes(of: handle.toOpaque(), as: UnsafeMutableRawPointer.self)
  return 0
}

/// The server's "host:port" as the app gave it; nil when NULL or malformed.
func serverEndpoint(_ text: UnsafePointer<CChar>?) -> ServerEndpoint? {
  guard let text else { return nil }
  return ServerEndpoint(cStringBytes(text, limit: 300))
}
