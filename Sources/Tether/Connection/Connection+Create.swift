import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// What tether_engine_create and tether_rtm_client_create share, once for both profiles:
// each reads its arguments and makes its session; these open its socket and start it.

/// The socket of a server given by its address; nil for a name (opened once the look-up
/// answers).
/// - Throws: ``TetherError/failed`` when the system gives no socket (logged as `refusal`,
///   with errno).
func openSocket(
  for endpoint: ServerEndpoint, logger: Logger, refusal: StaticString
) throws(TetherError) -> ConnectedUDPSocket? {
  guard let address = endpoint.address else { return nil }
  guard let socket = ConnectedUDPSocket(connectedTo: address) else {
    logger.log(.error, refusal, Int64(System.errno))
    throw .failed
  }
  return socket
}

/// Starts `connection` and hands it to the app through `out`: 0, or `failed` (nothing
/// left behind) when its name's look-up could not start.
func publish(_ connection: Connection, to out: UnsafeMutablePointer<OpaquePointer?>) -> Int32 {
  let handle = Unmanaged.passRetained(connection)
  guard connection.start() else {
    connection.shutDown()
    handle.release()
    return TetherError.failed.rawValue
  }
  out.pointee = OpaquePointer(handle.toOpaque())
  return 0
}
