// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - The login profile's own: channels and member events (docs/PROTOCOL.md §6)

extension EdgeServer {
  /// HEARTBEAT_ACK, then the oldest member events the client has not taken (one datagram).
  mutating func loginHeartbeat(
    sequence: UInt32, session: UInt32, eventsReceived: UInt32, cookie: UInt64,
    from address: PeerAddress, now: Instant
  ) {
    guard let login = hear(cookie, .login, from: address, now: now)?.login else {
      return answerUnheard(cookie, to: address)
    }
    guard session == login.session else {
      return otherServerSession(login, cookie: cookie, to: address)
    }
    let ack = Message.heartbeatAck(sequence: sequence, serverTimeMs: Self.milliseconds(now))
    outbox.send(ack, cookie: cookie, to: address)
    let batch = table.updateLogin(cookie) { session -> MemberEvents? in
      session.confirmed = true
      session.events.acknowledge(eventsReceived)
      return session.events.batch(from: session.events.firstSequence)
    }
    if let batch = batch ?? nil {
      counters.memberEventsResent &+= 1
      outbox.send(.memberEvents(batch), cookie: cookie, to: address)
    }
  }

  /// Applies the operation if its sequence is the next one (so each is applied once, in
  /// order), and acknowledges the highest applied either way.
  mutating func channelOperation(
    _ operation: ChannelOperation, cookie: UInt64, from address: PeerAddress, now: Instant
  ) {
    guard let login = hear(cookie, .login, from: address, now: now)?.login else {
      return answerUnheard(cookie, to: address)
    }
    guard operation.session == login.session else {
      return otherServerSession(login, cookie: cookie, to: address)
    }
    let next = operation.sequence == login.appliedOperations &+ 1
    let applied = next ? operation.sequence : login.appliedOperations
    table.updateLogin(cookie) {
      $0.appliedOperations = applied
      $0.confirmed = true
    }
    if next {
      apply(operation, user: login.userID, cookie: cookie)
    } else {
      counters.channelOperationsUnordered &+= 1
    }
    outbox.send(.channelAck(session: login.session, sequence: applied), cookie: cookie, to: address)
  }

  /// A LOGIN_HEARTBEAT or CHANNEL_OPERATION numbered in another server session than the
  /// one held under its cookie: its events count and operation sequence are not this
  /// session's, so nothing is taken, applied or confirmed. Its client either lost this
  /// session's LOGIN_ACCEPT (the server restarted, or made this session of a late LOGIN
  /// under the cookie, while the client went on in the session it had), or sent it before
  /// it took that accept. While the session is not confirmed, SESSION_UNKNOWN: the client
  /// logs in again and gets the first LOGIN_ACCEPT again (not resumed). Once confirmed, the
  /// client has shown it is in this session: a late datagram, dropped.
  private mutating func otherServerSession(
    _ login: LoginState, cookie: UInt64, to address: PeerAddress
  ) {
    counters.otherServerSession &+= 1
    guard !login.confirmed else { return }
    outbox.send(.sessionUnknown, cookie: cookie, to: address)
  }

  private mutating func apply(_ operation: ChannelOperation, user: UserID, cookie: UInt64) {
    switch operation.kind {
    case .join:
      switch table.join(operation.channel, cookie: cookie) {
      case .joined?:
        record(.channelJoined(channel: operation.channel, user: user))
        fleetLoginChannel(operation.channel, user: user, joined: true)
        announce(.joined, of: user, in: operation.channel, except: cookie)
      case .full?: counters.channelOperationsOverLimit &+= 1
      case .alreadyMember?, nil: break
      }
    case .leave:
      guard table.leave(operation.channel, cookie: cookie) else { return }
      record(.channelLeft(channel: operation.channel, user: user))
      fleetLoginChannel(operation.channel, user: user, joined: false)
      announce(.left, of: user, in: operation.channel, except: cookie)
    }
  }

  // MARK: - Member events

  /// Queues a `kind` event about `user` in `channel` for every member of it but `excluded`
  /// (nil: a member of another edge, none excluded). A session whose queue is full is ended
  /// once the current input is handled.
  mutating func announce(
    _ kind: MemberEvent.Kind, of user: UserID, in channel: ChannelName, except excluded: UInt64?
  ) {
    let entry = MemberEvent.Entry(kind: kind, channel: channel, userID: user)
    for (_, cookie) in table.loginChannels.members(of: channel) where cookie != excluded {
      guard let sequence = table.updateLogin(cookie, { $0.events.append(entry) }) ?? nil else {
        overflowed.append(cookie)
        continue
      }
      if pendingPushes[cookie] == nil { pendingPushes[cookie] = sequence }
    }
  }

  /// What one input produced, in order: the outbox, then the sessions ended by a full event
  /// queue, then each login session's new member events (once each, in as few MEMBER_EVENTS
  /// as they fit, by cookie order). Only a LOGIN_HEARTBEAT sends events again.
  mutating func takeOutput() -> [Outgoing] {
    while let cookie = overflowed.popLast() {
      guard table[cookie]?.login != nil else { continue }
      counters.eventQueueOverflows &+= 1
      end(cookie, cause: .eventQueueFull)
    }
    if !pendingPushes.isEmpty {
      for (cookie, first) in pendingPushes.sorted(by: { $0.key < $1.key }) {
        guard let session = table[cookie], let login = session.login else { continue }
        var sequence = first
        while let batch = login.events.batch(from: sequence) {
          outbox.send(.memberEvents(batch), cookie: cookie, to: session.address)
          sequence &+= UInt32(batch.count)
        }
      }
      pendingPushes.removeAll(keepingCapacity: true)
    }
    return writeOutput(outbox.take())
  }
}
