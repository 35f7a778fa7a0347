import TetherCore
import TetherEdge

/// The real ``EdgeServer`` and real ``LoginSession`` clients on one virtual clock, joined by
/// the same seeded links as ``SimWorld`` (loss, duplication, jitter, spikes, cuts per
/// direction): the login profile's simulator.
///
/// Every client entry point runs through ``LoginInvariants`` and is recorded as a
/// ``ClientStep`` for the scenario's own checks. The world also watches the server after
/// every input: which server session (``generation``) each client's cookie is in, the
/// member-event numbers it sent, when each session joined a channel, and three rules that
/// need the server's side (``violations``): a proof of a round trip only from a session it
/// holds, a session ended for its grace only when silent for the grace, and no reply larger
/// than its request to an address that holds no session.
public struct LoginWorld {
  public static let wallBase: UInt64 = 1_700_000_000
  public static let adminAddress = PeerAddress(bytes: [0xAD, 0x01])!

  public var server: EdgeServer
  public var clients: [LoginSession<SeededRandom>] = []
  public var invariants: [LoginInvariants] = []
  public var addresses: [PeerAddress] = []
  public var uplinkUp: [Bool] = []
  public var downlinkUp: [Bool] = []
  public var uplink: [LinkConditions] = []
  public var downlink: [LinkConditions] = []
  public var now: Instant = .zero
  public private(set) var counters = NetworkCounters()
  /// MEMBER_EVENTS and CHANNEL_ACK of an earlier server session delivered after the client
  /// took a newer session's LOGIN_ACCEPT: the known protocol issue (no session epoch on the
  /// wire yet). Dropped here, and counted.
  public private(set) var staleEpochDropped: UInt64 = 0
  /// LOGIN_HEARTBEAT and CHANNEL_OPERATION a client sent in an earlier server session that
  /// reach a newer one (the same issue upstream: they would confirm it). Dropped, counted.
  public private(set) var staleEpochUplinkDropped: UInt64 = 0
  /// LOGIN_ACCEPTs (not RESUMED) of the server session a CONNECTED client already holds,
  /// arriving late: set aside and counted (the same known issue).
  public private(set) var lateAcceptsDropped: UInt64 = 0
  /// Drop (and count) those late datagrams, as runs did before the server-session number
  /// existed; false (the default) delivers them, and the client sets aside what belongs to
  /// another server session by its number.
  public var dropsLateSessionDatagrams = false
  public private(set) var restarts = 0

  /// What each client did, in order; the scenario drains it after every step.
  public var steps: [ClientStep] = []
  /// Rules broken on the server's side, found while handling an input.
  public var violations: [Violation] = []

  /// Per client: the server session its current cookie is in (counted from 1; a new record
  /// after a restart or the grace is a new one), whether the server holds it now, its
  /// channels there, the highest member-event number sent to it in this server session,
  /// and for each channel the event numbers at which it (re)joined.
  public private(set) var generation: [UInt64] = []
  public private(set) var held: [Bool] = []
  public private(set) var heldChannels: [[ChannelName]] = []
  public private(set) var eventsSent: [UInt32] = []
  public private(set) var joinedAtEvent: [[ChannelName: [UInt32]]] = []
  /// When the server last heard the client's current session (a datagram it took as heard).
  public private(set) var lastHeard: [Instant?] = []
  /// The server session of the last LOGIN_ACCEPT each client took.
  public private(set) var acceptedGeneration: [UInt64] = []
  /// Proofs of a round trip sent from a session the server holds (checked rule count).
  public private(set) var serverChecks: UInt64 = 0

  public let networkSeed: UInt64
  private var linkRandom: [[SeededRandom]] = []
  private var queue: [Flight] = []
  private var inflight = FlightQueue()
  private var latestScheduled: [[Instant]] = []
  private var linkSent: [[UInt64]] = []
  private var serial: UInt64 = 0
  private var output = LoginOutput()
  private var adminNonce: UInt64 = 1

  /// One call into a client: the state before, what it was, and what it produced.
  public struct ClientStep {
    public var client: Int
    public var at: Instant
    public var before: LoginState
    public var step: LoginInvariants.Step
    public var notifications: [LoginNotification]
    public var sent: [Packet]
    public var violations: [String]
    /// For a datagram: the server session it was sent in.
    public var generation: UInt64?
  }

  public init(config: EdgeConfig, networkSeed: UInt64) {
    var config = config
    config.recordsEvents = true
    server = EdgeServer(config: config)
    self.networkSeed = networkSeed
  }

  public var wallClock: UInt64 { Self.wallBase + now.nanoseconds / 1_000_000_000 }

  public static let signer = TokenSigner(appID: Fixture.appID, certificate: SimWorld.certificate)

  /// A login token for `user` expiring `seconds` after the current wall clock.
  public func token(for user: UserID, expiresIn seconds: UInt64) -> Token {
    try! Token(validating: Self.signer.sign(.user(user), expiresAt: wallClock + seconds))
  }

  @discardableResult
  public mutating func addClient(config: LoginConfig, seed: UInt64) -> Int {
    let index = clients.count
    clients.append(try! LoginSession(config: config, random: SeededRandom(seed: seed)))
    invariants.append(LoginInvariants())
    addresses.append(SimWorld.address(index))
    uplinkUp.append(true)
    downlinkUp.append(true)
    uplink.append(LinkConditions())
    downlink.append(LinkConditions())
    latestScheduled.append([.zero, .zero])
    linkSent.append([0, 0])
    let base = networkSeed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &* 2
    linkRandom.append([SeededRandom(seed: base), SeededRandom(seed: base &+ 1)])
    generation.append(0)
    held.append(false)
    heldChannels.append([])
    eventsSent.append(0)
    joinedAtEvent.append([:])
    lastHeard.append(nil)
    acceptedGeneration.append(0)
    return index
  }

  /// The cookie of client `i`'s current login (from its first LOGIN).
  public func cookie(_ i: Int) -> UInt64? { invariants[i].cookie }

  // MARK: - The app's calls

  public mutating func login(_ i: Int, token: Token, user: UserID) -> LoginError? {
    var failure: LoginError?
    run(i, .login) { s, now, out in
      do throws(LoginError) {
        try s.login(token: token, userID: user, now: now, into: &out)
      } catch { failure = error }
      return failure == nil
    }
    if failure == nil {
      held[i] = false
      lastHeard[i] = nil
      heldChannels[i] = []
    }
    return failure
  }

  public mutating func logout(_ i: Int) -> LogoutError? {
    var failure: LogoutError?
    run(i, .logout) { s, now, out in
      do throws(LogoutError) { try s.logout(now: now, into: &out) } catch { failure = error }
      return failure == nil
    }
    return failure
  }

  /// join_channel, leave_channel or renew_token.
  public mutating func call(
    _ i: Int,
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) throws(TetherError) ->
      Void
  ) -> TetherError? {
    var failure: TetherError?
    run(i, .call) { s, now, out in
      do throws(TetherError) { try body(&s, now, &out) } catch { failure = error }
      return true
    }
    return failure
  }

  public mutating func networkChanged(_ i: Int) {
    run(i, .call) { s, now, out in
      s.networkChanged(now: now, into: &out)
      return true
    }
  }

  /// The operator kicks `user` (and bans it for `banSeconds`) through the admin entry point.
  public mutating func kickUser(_ user: UserID, banSeconds: UInt32) {
    adminNonce &+= 1
    let request = AdminKickUser(
      userID: user, banSeconds: banSeconds, unixTime: wallClock, nonce: adminNonce)
    let bytes = request.sealed(appID: Fixture.appID, certificate: SimWorld.certificate)
    let out = server.receive(bytes[...], from: Self.adminAddress, now: now, wallClock: wallClock)
    afterServer(out, input: nil)
    flush()
  }

  public mutating func restartServer() {
    restarts += 1
    // A restarted server numbers its sessions from elsewhere (a real one from a random
    // start), so its sessions are not taken for the previous run's.
    var config = server.config
    config.firstLoginSession &+= UInt32(restarts) &* 1_000_003
    server = EdgeServer(config: config)
    for i in held.indices {
      held[i] = false
      heldChannels[i] = []
    }
  }

  /// Runs one entry point of client `i`, checks it against ``LoginInvariants``, records
  /// it, and sends what it sent.
  /// Which entry point a step is (the call's outcome completes a login or logout).
  private enum Entry {
    case login, logout, call, advance
    case datagram(Message?)

    func step(succeeded: Bool) -> LoginInvariants.Step {
      switch self {
      case .login: .login(started: succeeded)
      case .logout: .logout(succeeded: succeeded)
      case .call: .call
      case .advance: .advance
      case .datagram(let message): .datagram(message)
      }
    }
  }

  private mutating func run(
    _ i: Int, _ entry: Entry, generation: UInt64? = nil,
    _ body: (inout LoginSession<SeededRandom>, Instant, inout LoginOutput) -> Bool
  ) {
    let before = clients[i].state
    output.removeAll()
    let ok = body(&clients[i], now, &output)
    let step = entry.step(succeeded: ok)
    let violations = invariants[i].check(
      clients[i], before: before, step: step, output: output, now: now)
    var sent: [Packet] = []
    for datagram in output.datagrams {
      let bytes = Array(datagram)
      let packet = try? Packet.decode(bytes[...])
      if let packet { sent.append(packet) }
      send(
        toServer: true, client: i, bytes: bytes, packet: packet,
        generation: acceptedGeneration[i])
    }
    steps.append(
      ClientStep(
        client: i, at: now, before: before, step: step, notifications: output.notifications,
        sent: sent, violations: violations, generation: generation))
    flush()
  }

  // MARK: - Time

  public var nextEvent: Instant? {
    var next = server.nextDeadline
    for client in clients {
      if let due = client.nextDeadline, next.map({ due < $0 }) ?? true { next = due }
    }
    if let due = inflight.next, next.map({ due < $0 }) ?? true { next = due }
    return next
  }

  public mutating func run(until time: Instant) {
    var steps = 0
    while step(until: time) {
      steps += 1
      precondition(steps < 5_000_000, "a deadline does not move")
    }
    now = max(now, time)
  }

  /// Runs the one earliest thing due by `time`; on a tie the server's deadline first, then
  /// deliveries, then the clients' deadlines (as ``SimWorld``).
  public mutating func step(until time: Instant) -> Bool {
    var client: (index: Int, due: Instant)?
    for i in clients.indices {
      if let due = clients[i].nextDeadline, client.map({ due < $0.due }) ?? true {
        client = (i, due)
      }
    }
    let serverDue = server.nextDeadline
    let flightDue = inflight.next
    guard let next = [serverDue, flightDue, client?.due].compactMap({ $0 }).min(), next <= time
    else { return false }
    now = max(now, next)
    if let due = serverDue, due <= now {
      afterServer(server.tick(now: now, wallClock: wallClock), input: nil)
    } else if let due = flightDue, due <= now, let flight = inflight.pop() {
      deliver(flight)
    } else if let (i, _) = client {
      run(i, .advance) { s, now, out in
        s.advance(to: now, into: &out)
        return true
      }
    }
    flush()
    return true
  }

  // MARK: - Network

  private mutating func send(
    toServer: Bool, client: Int, bytes: [UInt8], packet: Packet?, generation: UInt64 = 0
  ) {
    counters.sent += 1
    guard toServer ? uplinkUp[client] : downlinkUp[client] else {
      counters.cut += 1
      return
    }
    let conditions = toServer ? uplink[client] : downlink[client]
    let direction = toServer ? 0 : 1
    var random = linkRandom[client][direction]
    defer { linkRandom[client][direction] = random }
    if random.chance(conditions.loss) {
      counters.lost += 1
      return
    }
    let copies = random.chance(conditions.duplicate) ? 2 : 1
    if copies == 2 { counters.duplicated += 1 }
    if !toServer { serial += 1 }
    for _ in 0..<copies {
      var delay = conditions.latency + random.upTo(conditions.jitter)
      if random.chance(conditions.spikeChance) {
        counters.spiked += 1
        delay = delay + conditions.spike
      }
      linkSent[client][direction] += 1
      let order =
        UInt64(direction) << 62 | UInt64(client) << 40
        | (linkSent[client][direction] & (1 << 40 - 1))
      let flight = Flight(
        sentAt: now, at: now + delay, order: order, toServer: toServer, client: client,
        bytes: bytes, packet: packet, serial: serial, generation: generation)
      if flight.at < latestScheduled[client][direction] {
        counters.reordered += 1
      } else {
        latestScheduled[client][direction] = flight.at
      }
      if delay == .zero { queue.append(flight) } else { inflight.push(flight) }
    }
  }

  private mutating func flush() {
    var index = 0
    while index < queue.count {
      let flight = queue[index]
      index += 1
      deliver(flight)
    }
    queue.removeAll(keepingCapacity: true)
  }

  private mutating func deliver(_ flight: Flight) {
    let i = flight.client
    guard flight.toServer ? uplinkUp[i] : downlinkUp[i] else {
      counters.cut += 1
      return
    }
    if flight.toServer {
      // Sent before the client took the LOGIN_ACCEPT of the server session now held for its
      // cookie: the same known issue, upstream (a LOGIN_HEARTBEAT would confirm the new
      // session and make it answer RESUMED; a CHANNEL_OPERATION would be numbered in it).
      if dropsLateSessionDatagrams, let packet = flight.packet, packet.cookie == cookie(i),
        held[i],
        flight.generation < generation[i]
      {
        switch packet.message {
        case .loginHeartbeat, .channelOperation:
          staleEpochUplinkDropped += 1
          return
        default: break
        }
      }
      counters.delivered += 1
      let out = server.receive(
        flight.bytes[...], from: addresses[i], now: now, wallClock: wallClock)
      afterServer(out, input: (i, flight.bytes.count, flight.packet))
      return
    }
    let cookie = cookie(i)
    let mine = flight.packet.flatMap { $0.cookie == cookie ? $0.message : nil }
    switch mine {
    case .loginAccept(let accept)?
    where dropsLateSessionDatagrams && !accept.resumed && clients[i].state == .connected
      && flight.generation == acceptedGeneration[i]:
      // A late answer to a LOGIN already answered by this server session (a retry's, or a
      // copy): taken, it restarts the client's event count in the same session
      // (LoginDuplicateAcceptTests). The session epoch lets the client tell it apart.
      lateAcceptsDropped += 1
      return
    case .memberEvents?, .channelAck?:
      if dropsLateSessionDatagrams, flight.generation < acceptedGeneration[i] {
        staleEpochDropped += 1
        return
      }
    default: break
    }
    counters.delivered += 1
    let bytes = flight.bytes
    let loggingIn =
      clients[i].state == .connecting || clients[i].state == .connected
      || clients[i].state == .reconnecting
    run(i, .datagram(mine), generation: flight.generation) { s, now, out in
      _ = s.receive(datagram: bytes[...], now: now, into: &out)
      return true
    }
    if case .loginAccept? = mine, loggingIn { acceptedGeneration[i] = flight.generation }
  }

  /// Everything the server sent in answer to one input (`input`: from which client, its
  /// size and packet; nil for a tick or an admin request): its bookkeeping and rules, then
  /// the datagrams go out.
  private mutating func afterServer(
    _ outgoing: [Outgoing], input: (client: Int, size: Int, packet: Packet?)?
  ) {
    var ended: [UserID: EdgeEvent.LeaveCause] = [:]
    for event in server.takeEvents() {
      if case .loggedOut(let user, let cause) = event { ended[user] = cause }
    }
    var wasHeld = held
    for i in clients.indices {
      guard let cookie = cookie(i) else {
        held[i] = false
        continue
      }
      let info = server.loginSession(cookie: cookie)
      if let info, let user = clients[i].userID, info.userID != user {
        fail("server", i, "holds the client's cookie for another user")
      }
      if info != nil && !held[i] {
        generation[i] += 1
        eventsSent[i] = 0
        joinedAtEvent[i] = [:]
        heldChannels[i] = []
        lastHeard[i] = now
        wasHeld[i] = true
      }
      held[i] = info != nil
      // A grace ended only for a session silent for the whole grace.
      if wasHeld[i], !held[i], let user = clients[i].userID, ended[user] == .graceEnded,
        let heard = lastHeard[i]
      {
        serverChecks += 1
        if now.since(heard) < server.config.loginGrace {
          fail("grace", i, "session ended for its grace, heard \(SimClock.text(heard))")
        }
      }
    }
    if let (c, _, packet) = input, let packet, packet.cookie == cookie(c), held[c] {
      // What the server took as hearing the session.
      // A LOGIN is heard only when accepted (a refused one changes nothing).
      var heard = true
      if case .login = packet.message {
        heard = outgoing.contains { $0.address == addresses[c] && Self.isAccept($0.bytes) }
      }
      if heard { lastHeard[c] = now }
    }
    if let (c, size, packet) = input {
      // Each client has its own address and random cookies: a cookie held is at its address
      // (an earlier login's too, until its LOGOUT arrives).
      let holder = packet.map { server.loginSession(cookie: $0.cookie) != nil }
      if holder != true {
        serverChecks += 1
        let reply = outgoing.filter { $0.address == addresses[c] }.reduce(0) { $0 + $1.bytes.count }
        if reply > size {
          let answers = outgoing.filter { $0.address == addresses[c] }.map {
            (try? Packet.decode($0.bytes[...])).map { "\($0.cookie): \($0.message)" } ?? "?"
          }
          fail(
            "amplification", c,
            "\(reply) bytes answered \(size) (\(packet.map { "\($0.cookie): \($0.message)" } ?? "?")): "
              + "\(answers)")
        }
      }
    }
    for datagram in outgoing {
      guard let i = addresses.firstIndex(of: datagram.address) else { continue }
      let packet = try? Packet.decode(datagram.bytes[...])
      if let packet, packet.cookie == cookie(i) {
        switch packet.message {
        case .loginAccept, .heartbeatAck, .channelAck, .tokenRenewed:
          serverChecks += 1
          if !held[i] { fail("proof", i, "\(packet.message) from a session the server ended") }
        case .memberEvents(let batch):
          let last = batch.firstSequence &+ UInt32(batch.count) &- 1
          if last > eventsSent[i] { eventsSent[i] = last }
        default: break
        }
      }
      send(
        toServer: false, client: i, bytes: datagram.bytes, packet: packet,
        generation: generation[i])
    }
    for i in clients.indices where held[i] {
      guard let cookie = cookie(i), let info = server.loginSession(cookie: cookie) else {
        continue
      }
      for channel in info.channels where !heldChannels[i].contains(channel) {
        joinedAtEvent[i][channel, default: []].append(eventsSent[i])
      }
      heldChannels[i] = info.channels
    }
  }

  static func isAccept(_ bytes: [UInt8]) -> Bool {
    if case .loginAccept? = (try? Packet.decode(bytes[...]))?.message { true } else { false }
  }

  private mutating func fail(_ invariant: String, _ client: Int, _ detail: String) {
    violations.append(Violation(invariant: invariant, client: client, at: now, detail: detail))
  }

  /// Heals every link and makes it clean (`conditions` per client).
  public mutating func heal(clean conditions: [LinkConditions]) {
    for i in clients.indices {
      uplinkUp[i] = true
      downlinkUp[i] = true
      uplink[i] = conditions[i]
      downlink[i] = conditions[i]
    }
  }
}
