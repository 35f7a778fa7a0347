// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
  import TetherSodium
#endif

/// tether_engine_create and tether_rtm_client_create: `out` (a `tether_engine **` or a
/// `tether_rtm_client **`) set to NULL first; the config read up to the size it declares
/// (the rest from `defaults`); then `session` makes the profile's session from it, and the
/// app's `handler` is read (either throwing the code to return); then the connection is
/// started (``start(_:logger:loop:server:out:)``) with a `Profile`. Returns 0, or the code
/// tether.h lists for create.
func create<Session, Sink: AppCallbacks, Config: ConfigStruct>(
  _: SessionProfile<Session, Sink>.Type, loop: OpaquePointer?, config: UnsafePointer<Config>?,
  defaults: Config, handler: UnsafePointer<Sink.Handler>?, context: UnsafeMutableRawPointer?,
  out: UnsafeMutableRawPointer?, session: (Config) throws(TetherError) -> Session
) -> Int32 {
  guard let out else { return TetherError.invalidArgument.rawValue }
  out.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
  guard let config, let given = readSized(config, minimum: minimumConfigSize, defaults: defaults),
    given.own_lateness_off <= 1
  else { return TetherError.invalidArgument.rawValue }
  do throws(TetherError) {
    let session = try session(given)
    let callbacks = try Sink(handler, context: context)
    let profile = SessionProfile(session: consume session, callbacks: callbacks)
    return start(
      profile, logger: profile.callbacks.logger, loop: loop, server: given.server,
      ownLateness: given.own_lateness_off == 0, device: given.bind_interface, out: out)
  } catch {
    return error.rawValue
  }
}

/// The second half of create: libsodium, the server's endpoint and interface, the loop, the
/// socket, and the connection started and handed to the app through `out`; its own
/// lateness histogram only when `ownLateness` (the config's `own_lateness_off` is 0). One
/// copy for both profiles (inlined into each, it took 1.1 KB of aarch64 text more).
@inline(never)
private func start(
  _ profile: Profile, logger: Logger, loop: OpaquePointer?, server: UnsafePointer<CChar>?,
  ownLateness: Bool, device: UnsafePointer<CChar>?, out: UnsafeMutableRawPointer
) -> Int32 {
  guard let endpoint = serverEndpoint(server) else { return TetherError.invalidArgument.rawValue }
  let interface: [UInt8]?
  do throws(TetherError) {
    interface = try interfaceName(device)
  } catch {
    return error.rawValue
  }
  // Protocol version 2 seals with libsodium, which must start once per process before any
  // other call (sodium_init: it may be called again, from any thread). It fails only when
  // the system has no random source.
  guard SodiumCrypto.start() else {
    logger.log(.error, "create: sodium_init failed")
    return TetherError.failed.rawValue
  }
  guard let loop = loop ?? tether_ev_default_loop() else { return TetherError.failed.rawValue }
  let connection = Connection(
    context: LoopRegistry.context(of: loop), profile: profile, logger: logger,
    endpoint: endpoint, device: interface, stats: ConnectionCounters(ownLateness: ownLateness))
  let handle = Unmanaged.passRetained(connection)
  guard connection.start() else {
    // No socket, or the look-up could not start (logged): nothing is left behind.
    connection.shutDown()
    connection.lifecycle = .released
    handle.release()
    return TetherError.failed.rawValue
  }
  out.storeBytes(of: handle.toOpaque(), as: UnsafeMutableRawPointer.self)
  return 0
}

/// `bind_interface` as the app gave it: nil (the loop's shared socket) for NULL or "";
/// otherwise the name, NUL-terminated, for a socket of the connection's own bound to it.
/// - Throws: ``TetherError/invalidArgument`` for a name of more than 15 bytes (IFNAMSIZ) or
///   with a byte that is not printable ASCII, a space, '/' or ':' (none names a Linux
///   interface).
func interfaceName(_ text: UnsafePointer<CChar>?) throws(TetherError) -> [UInt8]? {
  guard let text else { return nil }
  var name = cStringBytes(text, limit: 15)
  guard !name.isEmpty else { return nil }
  guard name.count <= 15 else { throw .invalidArgument }
  for byte in name {
    guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "/"), byte != UInt8(ascii: ":") else {
      throw .invalidArgument
    }
  }
  name.appendByte(0)
  return name
}

/// The server's "host:port" as the app gave it; nil when NULL or malformed.
func serverEndpoint(_ text: UnsafePointer<CChar>?) -> ServerEndpoint? {
  guard let text else { return nil }
  return ServerEndpoint(cStringBytes(text, limit: 300))
}
