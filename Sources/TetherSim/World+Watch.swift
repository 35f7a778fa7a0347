// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// What the server holds for one client, as the world watches it after every input.
public struct ServerSide {
  /// The cookie of the client's current session (of its latest JOIN or LOGIN), and who
  /// that request asked to be (nil: a uid the server assigns).
  public internal(set) var cookie: UInt64?
  var requested: [UInt8]?
  /// Who the server holds that session as (channel and uid, or user id).
  var identity: [UInt8]?
  /// The server session the cookie is in (counted from 1; a new record after a restart or
  /// a silence is a new one), and whether the server holds it now.
  public internal(set) var generation: UInt64 = 0
  public internal(set) var held = false
  /// Its channels at the server, the highest member-event number sent to it in this server
  /// session, and for each channel the event numbers at which it (re)joined.
  public internal(set) var channels: [ChannelName] = []
  public internal(set) var eventsSent: UInt32 = 0
  public internal(set) var joinedAtEvent: [ChannelName: [UInt32]] = [:]
  /// When the server last heard the session (a datagram it took as heard).
  public internal(set) var lastHeard: Instant?
  /// The server session of the last accept the client took.
  public internal(set) var acceptedGeneration: UInt64 = 0
  /// Over version 2: the session ids the client's CONFIRMs named, newest last, each with
  /// the client's cookie it stood for (a resume renames the edge's session to the new id).
  public internal(set) var sessions: [(id: UInt64, cookie: UInt64)] = []

  mutating func named(_ id: UInt64, cookie: UInt64) {
    guard !sessions.contains(where: { $0.id == id }) else { return }
    sessions.append((id, cookie))
    if sessions.count > 8 { sessions.removeFirst() }
  }
}

extension Message {
  /// A JOIN or LOGIN: it opens (or resumes) a session.
  var opensSession: Bool {
    switch self {
    case .join, .login: true
    default: false
    }
  }

  var isAccept: Bool {
    switch self {
    case .accept, .loginAccept: true
    default: false
    }
  }
}

// MARK: - The server's side (``World/watchesServer``)

extension World {
  /// Three rules need the server's side: a proof of a round trip only from a session it
  /// holds; a session ended for silence (forget-after, a login's grace) only when silent
  /// that long; no reply larger than its request to an address that holds no session.
  mutating func watch(
    _ outgoing: [Outgoing], _ packets: [Packet?], input: (client: Int, size: Int, packet: Packet?)?
  ) {
    var ended: [[UInt8]: EdgeEvent.LeaveCause] = [:]
    for event in server.takeEvents() {
      switch event {
      case .loggedOut(let user, let cause): ended[user.bytes] = cause
      case .left(let channel, let uid, let cause): ended[Self.identity(channel, uid)] = cause
      default: break
      }
    }
    for i in sides.indices { watchHeld(i, ended: ended) }
    guard let (c, size, packet) = input else { return }
    if let packet, packet.cookie == sides[c].cookie, sides[c].held {
      // What the server took as hearing the session: a JOIN or LOGIN only when accepted
      // (a refused one changes nothing).
      let heard =
        !packet.message.opensSession
        || zip(outgoing, packets).contains {
          $0.address == addresses[c] && $1?.message.isAccept == true
        }
      if heard { sides[c].lastHeard = now }
    }
    // Each client has its own address and random cookies: a cookie held is at its address
    // (an earlier session's too, until its LEAVE or LOGOUT arrives).
    guard packet.map({ held($0.cookie, of: c) != nil }) != true else { return }
    serverChecks += 1
    let reply = outgoing.filter { $0.address == addresses[c] }.reduce(0) { $0 + $1.bytes.count }
    if reply > size {
      fail("amplification", c, "\(reply) bytes answered \(size): \(packet.map(\.message) as Any)")
    }
  }

  /// Whether the server holds client `i`'s session, which server session that is, and
  /// whether it ended for silence only when silent that long.
  private mutating func watchHeld(_ i: Int, ended: [[UInt8]: EdgeEvent.LeaveCause]) {
    guard let cookie = sides[i].cookie else { return }
    let info = held(cookie, of: i)
    if let info, let requested = sides[i].requested, info.identity != requested {
      fail("server", i, "holds the client's cookie for another user")
    }
    var wasHeld = sides[i].held
    if info != nil && !sides[i].held {
      sides[i].generation += 1
      sides[i].eventsSent = 0
      sides[i].joinedAtEvent = [:]
      sides[i].channels = []
      sides[i].lastHeard = now
      wasHeld = true
    }
    sides[i].held = info != nil
    if let info { sides[i].identity = info.identity }
    guard wasHeld, info == nil, let identity = sides[i].identity, let heard = sides[i].lastHeard,
      let cause = ended[identity], cause == .graceEnded || cause == .forgotten
    else { return }
    serverChecks += 1
    let limit = cause == .graceEnded ? server.config.loginGrace : server.config.forgetAfter
    if now.since(heard) < limit {
      fail(cause.rawValue, i, "session ended for silence, heard \(SimClock.text(heard))")
    }
  }

  /// A datagram client `i` sends: a JOIN or LOGIN under a new cookie starts a new session.
  mutating func noteSent(_ packet: Packet, by i: Int) {
    let requested: [UInt8]?
    switch packet.message {
    case .join(let request):
      requested = request.uid == 0 ? nil : Self.identity(request.channel, request.uid)
    case .login(let request): requested = request.userID.bytes
    default: return
    }
    if packet.cookie != sides[i].cookie {
      sides[i].held = false
      sides[i].lastHeard = nil
      sides[i].channels = []
    }
    sides[i].cookie = packet.cookie
    sides[i].requested = requested
  }

  /// A datagram the server sends client `i`: a proof of a round trip only from a session it
  /// holds; member events numbered.
  mutating func noteReceived(_ packet: Packet, by i: Int) {
    guard packet.cookie == sides[i].cookie else { return }
    switch packet.message {
    case .accept, .loginAccept, .heartbeatAck, .channelAck, .tokenRenewed:
      serverChecks += 1
      if !sides[i].held { fail("proof", i, "\(packet.message) from a session the server ended") }
    case .memberEvents(let batch):
      let last = batch.firstSequence &+ UInt32(batch.count) &- 1
      if last > sides[i].eventsSent { sides[i].eventsSent = last }
    default: break
    }
  }

  /// The channels each held session has at the server now, and when it (re)joined each.
  mutating func noteChannels() {
    for i in sides.indices where sides[i].held {
      guard let cookie = sides[i].cookie, let info = held(cookie, of: i) else { continue }
      for channel in info.channels where !sides[i].channels.contains(channel) {
        sides[i].joinedAtEvent[channel, default: []].append(sides[i].eventsSent)
      }
      sides[i].channels = info.channels
    }
  }

  /// With ``setsAsideLate``: whether `flight` is a late datagram of another server session
  /// of its client (and counts it).
  mutating func setsAside(_ flight: Flight) -> Bool {
    let i = flight.client
    guard let packet = flight.packet, packet.cookie == sides[i].cookie else { return false }
    switch packet.message {
    case .loginHeartbeat, .channelOperation:
      // Sent before the client took the LOGIN_ACCEPT of the server session now held for its
      // cookie. (They name their server session, so the edge takes nothing of them; set
      // aside, the run shows the checks hold either way.)
      guard flight.toServer, sides[i].held, flight.generation < sides[i].generation else {
        return false
      }
      counters[.lateUplink] += 1
    case .loginAccept(let accept)
    where !accept.resumed && clients[i].phase == .connected
      && flight.generation == sides[i].acceptedGeneration:
      // A late answer to a LOGIN already answered by this server session (a retry's, or a
      // copy): taken, it restarts the client's event count in the same session
      // (LoginDuplicateAcceptTests). The session epoch lets the client tell it apart.
      counters[.lateAccepts] += 1
    case .memberEvents, .channelAck:
      guard !flight.toServer, flight.generation < sides[i].acceptedGeneration else { return false }
      counters[.lateDownlink] += 1
    default:
      return false
    }
    return true
  }

  /// The key the server holds client `i`'s session under `cookie` by: the newest session id
  /// the client's CONFIRMs named for it that the server holds (the newest named if none is
  /// held).
  public func serverKey(_ cookie: UInt64, of i: Int) -> UInt64 {
    // From the newest back, with no array made: every invariant check asks this.
    var newestNamed: UInt64?
    for session in sides[i].sessions.reversed() where session.cookie == cookie {
      if holds(session.id) { return session.id }
      newestNamed = newestNamed ?? session.id
    }
    return newestNamed ?? 0
  }

  /// Whether the server holds a session (channel or login) under `key`.
  func holds(_ key: UInt64) -> Bool {
    server.session(cookie: key) != nil || server.loginSession(cookie: key) != nil
  }

  /// Client `i`'s session under `cookie`, if the server holds one: who it is and its
  /// channels.
  func held(_ cookie: UInt64, of i: Int) -> (identity: [UInt8], channels: [ChannelName])? {
    let cookie = serverKey(cookie, of: i)
    if let session = server.session(cookie: cookie) {
      return (Self.identity(session.channel, session.uid), [session.channel])
    }
    return server.loginSession(cookie: cookie).map { ($0.userID.bytes, $0.channels) }
  }

  static func identity(_ channel: ChannelName, _ uid: UInt32) -> [UInt8] {
    channel.bytes + (0..<4).map { UInt8(truncatingIfNeeded: uid >> ($0 * 8)) }
  }

  mutating func fail(_ invariant: String, _ client: Int, _ detail: String) {
    violations.append(Violation(invariant: invariant, client: client, at: now, detail: detail))
  }
}
