#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

// Performing the session's actions: datagrams and C callbacks, in the order the session
// produced them, except when deadlines fire together: then every engine's callbacks come
// first, and the datagrams set aside go out when ``flush(rescheduling:)`` next runs.

extension Engine {
  /// Performs every queued action in order (datagrams set aside first), then, unless told
  /// not to, tells the loop the next deadline. A call made from a callback lands here too
  /// and returns at once: the outer loop performs its actions.
  func flush(rescheduling: Bool = true) {
    guard !dispatching else { return }
    dispatching = true
    sendSetAside()
    while cursor < output.actions.count && !destroyed {
      let action = output.actions[cursor]
      cursor += 1
      switch action {
      case .send(let datagram): send(datagram)
      case .notify(let notification): deliverUnlessSilenced(notification)
      }
    }
    if !destroyed { clearOutput() }
    dispatching = false
    if rescheduling && !destroyed { reschedule() }
  }

  /// Delivers the queued notifications and sets the datagrams aside.
  func deliverNotifications() {
    guard !dispatching else { return }
    dispatching = true
    while cursor < output.actions.count && !destroyed {
      let action = output.actions[cursor]
      cursor += 1
      switch action {
      case .send: sendsSetAside = true
      case .notify(let notification): deliverUnlessSilenced(notification)
      }
    }
    dispatching = false
  }

  /// The app left from inside a callback: what was queued before and is not delivered yet
  /// never is (tether.h: no callback after leave until the next join but the leave's own).
  /// Its datagrams still go out.
  func silenceUndelivered() {
    if dispatching { silencedBefore = output.actions.count }
  }

  /// At destroy: the datagrams the session had already produced still go out (a LEAVE
  /// from a tether_leave_channel just before, in the same callback); the notifications
  /// not yet delivered never are.
  func sendUndelivered() {
    sendSetAside()
    while cursor < output.actions.count {
      if case .send(let datagram) = output.actions[cursor] { send(datagram) }
      cursor += 1
    }
    clearOutput()
  }

  private func sendSetAside() {
    guard sendsSetAside else { return }
    sendsSetAside = false
    for action in output.actions[..<cursor] {
      if case .send(let datagram) = action { send(datagram) }
    }
  }

  private func clearOutput() {
    output.removeAll()
    cursor = 0
    sendsSetAside = false
    silencedBefore = 0
  }

  /// `cursor` has moved past the action being delivered.
  private func deliverUnlessSilenced(_ notification: ChannelNotification) {
    if cursor > silencedBefore { deliver(notification) }
  }

  private func send(_ datagram: Datagram) {
    // No log from inside destroy, which promises no callback (sendUndelivered).
    guard let socket else {
      stats.sendFailures &+= 1
      if !destroyed { callbacks.log(.debug, "not sent: the server's name has no address yet") }
      return
    }
    if socket.send(output.bytes(of: datagram)) {
      stats.datagramsOut &+= 1
    } else {
      stats.sendFailures &+= 1
      if !destroyed { callbacks.log(.debug, "send failed, errno", Int64(System.errno)) }
    }
  }

  private func deliver(_ notification: ChannelNotification) {
    switch notification {
    case .joinChannelSuccess(_, let uid, let elapsed):
      callbacks.joinSuccess(channelCString, uid, elapsed, rejoin: false)
    case .rejoinChannelSuccess(_, let uid, let elapsed):
      callbacks.joinSuccess(channelCString, uid, elapsed, rejoin: true)
    case .joinAttempt(let status):
      joinAttempted(status.attempt)
      guard !destroyed else { return }
      let now = self.now
      callbacks.joinAttempt(
        status.attempt, status.nextAttemptAt.since(now).clampedMilliseconds,
        status.giveUpAt.since(now).clampedMilliseconds)
    default:
      callbacks.deliver(notification)
    }
  }
}
