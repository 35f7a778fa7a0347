// SPDX-License-Identifier: Apache-2.0
/// How far a connection has performed its session's output: datagrams and C callbacks, in
/// the order the session produced them, except when deadlines fire together: then every
/// connection's callbacks come first, and the datagrams set aside go out when
/// ``Connection/flush(rescheduling:)`` next runs.
struct Delivery {
  /// The next action of the output to perform.
  var cursor = 0
  /// Datagrams before `cursor` were set aside while deadlines fired together.
  var sendsSetAside = false
  /// Notifications queued before this index are not delivered: the app left (or logged
  /// out) from a callback after they were queued.
  var silencedBefore = 0
}

// The session's output is generic over its notifications; these loops are not: they reach
// its actions by index through the profile, so they exist once in the library rather than
// once per profile. A delivery runs in `dispatching` (Lifecycle.swift): a call made from a
// callback queues its actions behind those already queued and returns, and this loop
// performs them too.

extension Connection {
  /// Performs every queued action in order (datagrams set aside first), then, unless told
  /// not to, tells the loop the next deadline. A call made from a callback lands here too
  /// and returns at once: the delivery under way performs its actions.
  func flush(rescheduling: Bool) {
    guard lifecycle == .live, perform(settingSendsAside: false) else { return }
    clearOutput()
    if rescheduling { reschedule() }
  }

  /// Delivers the queued notifications and sets the datagrams aside.
  func deliverNotifications() {
    guard lifecycle == .live else { return }
    _ = perform(settingSendsAside: true)
  }

  /// The one delivery loop: from `live` to `dispatching` and back, unless a callback
  /// destroyed the connection (false: it stays `destroyed`, and nothing more is done).
  private func perform(settingSendsAside: Bool) -> Bool {
    lifecycle = .dispatching
    if !settingSendsAside { sendSetAside() }
    while lifecycle == .dispatching {
      if profile.hasUnsecured { profile.secure(now: now) }
      guard delivery.cursor < profile.actionCount else { break }
      let index = delivery.cursor
      delivery.cursor += 1
      let delivering = index >= delivery.silencedBefore
      guard let datagram = profile.action(at: index, delivering: delivering, for: self) else {
        continue
      }
      if settingSendsAside { delivery.sendsSetAside = true } else { send(datagram) }
    }
    guard lifecycle == .dispatching else { return false }
    lifecycle = .live
    return true
  }

  /// At destroy: the datagrams the session had already produced still go out (a LEAVE
  /// or LOGOUT from a call just before, in the same callback); the notifications not yet
  /// delivered never are.
  func sendUndelivered() {
    sendSetAside()
    if profile.hasUnsecured { profile.secure(now: now) }
    while delivery.cursor < profile.actionCount {
      if let datagram = profile.action(at: delivery.cursor, delivering: false, for: self) {
        send(datagram)
      }
      delivery.cursor += 1
    }
    clearOutput()
  }

  /// The app left (or logged out) from inside a callback: what was queued before and is
  /// not delivered yet never is (tether.h: nothing after leave or logout until the next
  /// join or login but their own callbacks). Its datagrams still go out. `end`: how many
  /// actions were queued before the call, when the call has already added its own.
  func silenceUndelivered(before end: Int? = nil) {
    if lifecycle == .dispatching { delivery.silencedBefore = end ?? profile.actionCount }
  }

  private func sendSetAside() {
    guard delivery.sendsSetAside else { return }
    delivery.sendsSetAside = false
    for index in 0..<delivery.cursor {
      if let datagram = profile.action(at: index, delivering: false, for: self) { send(datagram) }
    }
  }

  private func clearOutput() {
    profile.removeActions()
    delivery = Delivery()
  }
}
