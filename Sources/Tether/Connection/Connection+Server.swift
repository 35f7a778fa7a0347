// SPDX-License-Identifier: Apache-2.0
import CLibev
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// The server's address when the app gave a name: looked up off the loop's thread at
// create and at tether_set_server, and again while rejoins go unanswered (an operator
// moves a fleet by changing what the name resolves to) or after a network change. Until a
// name has resolved there is no socket: the JOINs the session sends meanwhile count as
// attempts but go nowhere, and the first address found gets a JOIN at once.

extension Connection {
  /// A JOIN attempt every this many without an answer looks the name up again.
  static let attemptsPerLookup: UInt32 = 3

  /// Starts looking the endpoint's name up, unless it is an address or a look-up is
  /// already running. False (errno set, logged) if the look-up could not start.
  @discardableResult
  func lookUpName() -> Bool {
    guard endpoint.address == nil, lookup == nil else { return true }
    lookup = startLookUp(of: endpoint)
    return lookup != nil
  }

  /// A look-up of `endpoint`'s name, answered on this connection's loop; nil (errno set,
  /// logged) if no thread or descriptor could be had.
  private func startLookUp(of endpoint: ServerEndpoint) -> NameLookup? {
    let started = NameLookup(
      host: endpoint.name, port: endpoint.port, loop: loop, data: handle,
      callback: connectionLookupAnswered)
    if started == nil {
      logger.log(.error, "server name: no thread for the look-up, errno", Int64(System.errno))
    } else {
      logger.log(.debug, "server name: looking it up")
    }
    return started
  }

  /// A JOIN (or LOGIN) went out with no answer yet: every ``attemptsPerLookup`` attempts,
  /// or every attempt while the name has no address at all, the name is looked up again.
  func attempted(_ attempt: UInt32) {
    if server == nil || attempt % Self.attemptsPerLookup == 0 { lookUpName() }
  }

  /// The look-up thread answered: a new address gets a socket and, if the session is
  /// (re)joining, a JOIN at once; the same address changes nothing; a failure is logged
  /// (the next unanswered attempts try again).
  func lookupAnswered() {
    guard let running = lookup, let answer = running.answer() else { return }
    running.cancel(loop: loop)
    lookup = nil
    switch answer {
    case .failed(let code):
      logger.log(.warning, "server name: look-up failed, getaddrinfo code", Int64(code))
    case .resolved(let address):
      if let server, server.same(as: address) { return }
      let first = server == nil
      guard useSocket(to: address) else {
        logger.log(
          .error, "server name: no UDP socket for its address, errno", Int64(System.errno))
        return
      }
      logger.log(.info, first ? "server name: resolved" : "server name: moved")
      profile.endpointResolved(now: now)
      flush(rescheduling: true)
    }
  }

  /// tether_set_server: an address is used at once; a name closes the socket and is
  /// looked up (packets wait for its address). Either way the session rejoins
  /// (SETTING_PROXY_SERVER) as the header says. False (errno set) if no socket or no
  /// look-up could be had; nothing changed then.
  func setServer(_ replacement: ServerEndpoint) -> Bool {
    // What the new endpoint needs is had first, so a failure changes nothing.
    let fresh: DatagramSocket?
    let started: NameLookup?
    if let address = replacement.address {
      guard let socket = context.acquireSocket(to: address, device: device, for: slot) else {
        return false
      }
      (fresh, started) = (socket, nil)
    } else {
      guard let running = startLookUp(of: replacement) else { return false }
      (fresh, started) = (nil, running)
    }
    lookup?.cancel(loop: loop)
    lookup = started
    endpoint = replacement
    switchSocket(to: fresh, server: replacement.address)
    profile.endpointChanged(now: now)
    flush(rescheduling: true)
    return true
  }
}

/// The look-up's eventfd is readable: its answer is in.
private func connectionLookupAnswered(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let data = tether_ev_data_io(io) else { return }
  Connection.enter(Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()) {
    $0.lookupAnswered()
  }
}
