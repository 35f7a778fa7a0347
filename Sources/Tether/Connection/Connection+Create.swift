import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// What tether_engine_create and tether_rtm_client_create share, once for both profiles:
// each reads its arguments, opens its socket and makes its session; this starts it.

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
