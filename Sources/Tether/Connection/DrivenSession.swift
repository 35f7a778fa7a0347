// SPDX-License-Identifier: Apache-2.0
#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// A core session a ``Connection`` drives through its ``SessionProfile``: the channel
/// session and the login session both are. Each says how it takes a change of network or
/// server, and what it counted.
protocol DrivenSession {
  associatedtype Notification
  var nextDeadlineWindow: DeadlineWindow? { get }
  mutating func advance(to now: Instant, into output: inout SessionOutput<Notification>)
  mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout SessionOutput<Notification>
  ) -> WireError?
  /// The device's network changed (after the connection made a fresh socket).
  mutating func networkChanged(
    byUser: Bool, now: Instant, into output: inout SessionOutput<Notification>)
  /// The app switched to another endpoint (after the new socket or look-up).
  mutating func endpointChanged(now: Instant, into output: inout SessionOutput<Notification>)
  /// A looked-up name gave a new address (after the new socket).
  mutating func endpointResolved(now: Instant, into output: inout SessionOutput<Notification>)
  /// Datagrams that did not decode, datagrams of another session, and attempts sent.
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) { get }
}

extension ChannelSession: DrivenSession {
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    (counters.malformed, counters.foreign, counters.joinAttempts)
  }
}

extension LoginSession: DrivenSession {
  // A new socket or address, whatever the cause: a LOGIN at once (a RELOGIN while
  // CONNECTED, which moves the session to the new address).
  mutating func networkChanged(byUser: Bool, now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  mutating func endpointChanged(now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  mutating func endpointResolved(now: Instant, into output: inout LoginOutput) {
    networkChanged(now: now, into: &output)
  }
  var trafficCounters: (malformed: UInt64, foreign: UInt64, attempts: UInt64) {
    (counters.malformed, counters.foreign, counters.loginAttempts)
  }
}
