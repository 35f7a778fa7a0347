import TetherCore
import TetherEdge

/// The real ``EdgeServer`` (sans-IO) and real `ChannelSession` clients (each a
/// ``Harness``) on one virtual clock, joined by a simulated network.
///
/// No sockets: client datagrams go to ``EdgeServer/receive(_:from:now:wallClock:)`` and the
/// server's go to the client whose ``PeerAddress`` they name. Each direction of each
/// client's link can be cut (``uplinkUp``, ``downlinkUp``) and has its own
/// ``LinkConditions``: latency, jitter, spikes, loss and duplication, drawn from a seeded
/// generator, so a run is a pure function of its seed. By default every link is perfect
/// and instant: a datagram is handled at the instant it is sent.
public struct SimWorld {
  public static let certificate = Array("cert-1".utf8)
  /// The wall clock (unix seconds) at virtual time zero.
  public static let wallBase: UInt64 = 1_700_000_000

  public var server: EdgeServer
  public var clients: [Harness] = []
  public var addresses: [PeerAddress] = []
  /// Client to server, per client.
  public var uplinkUp: [Bool] = []
  /// Server to client, per client.
  public var downlinkUp: [Bool] = []
  /// Both directions: reads true when both are up; setting cuts or heals both.
  public var linkUp: [Bool] {
    get { zip(uplinkUp, downlinkUp).map { $0 && $1 } }
    set {
      uplinkUp = newValue
      downlinkUp = newValue
    }
  }
  /// Client to server, per client.
  public var uplink: [LinkConditions] = []
  /// Server to client, per client.
  public var downlink: [LinkConditions] = []
  public var now: Instant = .zero
  /// Everything the server sent, decoded (admin answers are not packets: `packet` nil);
  /// kept while ``recordsServerSent`` is true.
  public var serverSent: [(at: Instant, to: PeerAddress, packet: Packet?, bytes: [UInt8])] = []
  public var recordsServerSent = true
  /// Every datagram delivered, in order; kept while ``recordsDeliveries`` is true.
  public var deliveries: [Delivery] = []
  public var recordsDeliveries = false
  /// Datagrams the network loses on top of its conditions: true drops it (`toServer`, the
  /// client, its packet).
  public var loses: (_ toServer: Bool, _ client: Int, _ packet: Packet?) -> Bool = { _, _, _ in
    false
  }
  public private(set) var counters = NetworkCounters()
  /// Server restarts so far.
  public private(set) var restarts = 0
  /// The network's seed: each client's link draws its faults from its own generator, per
  /// direction, so a run does not depend on the order in which the server happens to
  /// address its clients (a dictionary's).
  public let networkSeed: UInt64
  private var linkRandom: [[SeededRandom]] = []

  /// Datagrams due now, in the order they were sent.
  private var queue: [Flight] = []
  private var inflight = FlightQueue()
  /// Per client and direction (uplink 0, downlink 1): the latest delivery time scheduled,
  /// and how many datagrams were sent (the tie-break between datagrams due together).
  private var latestScheduled: [[Instant]] = []
  private var linkSent: [[UInt64]] = []

  /// One datagram as it arrived. `state` is the client's state just before a downlink
  /// datagram reached it (for an uplink one, its state when the server got it).
  public struct Delivery {
    public var sentAt: Instant
    public var at: Instant
    public var toServer: Bool
    public var client: Int
    public var packet: Packet?
    public var state: ConnectionState
  }

  public init(config: EdgeConfig = SimWorld.config(), networkSeed: UInt64 = 1) {
    server = EdgeServer(config: config)
    self.networkSeed = networkSeed
  }

  public static func config(maxSessions: Int = 10_000) -> EdgeConfig {
    // The fixture's values are valid: these cannot throw.
    var config = try! EdgeConfig(
      appID: Fixture.appID, appCertificate: certificate, maxSessions: maxSessions)
    config.firstLoginSession = 0  // deterministic runs
    return config
  }

  public static let signer = TokenSigner(appID: Fixture.appID, certificate: certificate)

  public var wallClock: UInt64 { Self.wallBase + now.nanoseconds / 1_000_000_000 }

  /// A token for `channel` and `uid`, expiring `seconds` after the current wall clock.
  public func token(channel: String = "lobby", uid: UInt32 = 0, expiresIn seconds: UInt64 = 3600)
    -> Token
  {
    Self.token(channel: channel, uid: uid, expiresAt: wallClock + seconds)
  }

  /// A token for `channel` and `uid` expiring at `expiresAt` (unix seconds; 0: never).
  public static func token(channel: String = "lobby", uid: UInt32 = 0, expiresAt: UInt64) -> Token {
    let grant = TokenGrant.channel(try! ChannelName(validating: Array(channel.utf8)), uid: uid)
    return try! Token(validating: signer.sign(grant, expiresAt: expiresAt))
  }

  public static func address(_ index: Int) -> PeerAddress {
    PeerAddress(bytes: [
      0xC1, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index),
    ])!
  }

  // MARK: - Clients

  /// Adds a client whose link is up and perfect; `seed` feeds its cookies and jitter.
  @discardableResult
  public mutating func addClient(config: ChannelConfig = Fixture.config, seed: UInt64? = nil)
    -> Int
  {
    let index = clients.count
    var client = Harness(config: config, seed: seed ?? UInt64(index) &+ 11)
    client.now = now
    clients.append(client)
    addresses.append(Self.address(index))
    uplinkUp.append(true)
    downlinkUp.append(true)
    uplink.append(LinkConditions())
    downlink.append(LinkConditions())
    latestScheduled.append([.zero, .zero])
    linkSent.append([0, 0])
    let base = networkSeed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &* 2
    linkRandom.append([SeededRandom(seed: base), SeededRandom(seed: base &+ 1)])
    return index
  }

  /// Client `i` calls `join_channel`; what it sends goes out at once.
  public mutating func join(
    _ i: Int, channel: String = "lobby", uid: UInt32 = 0, token: Token? = nil
  ) throws {
    let name = try ChannelName(validating: Array(channel.utf8))
    let token = token ?? self.token(channel: channel, uid: uid)
    try act(i) { s, now, out throws(TetherError) in
      try s.join(token: token, channel: name, uid: uid, now: now, into: &out)
    }
  }

  public mutating func leave(_ i: Int) { act(i) { s, now, out in s.leave(now: now, into: &out) } }

  public mutating func renew(_ i: Int, _ token: Token) throws {
    try act(i) { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  /// Runs `body` on client `i` now, then sends what it sent.
  public mutating func act<E: Error>(
    _ i: Int,
    _ body: (inout ChannelSession<SeededRandom>, Instant, inout ChannelOutput) throws(E) -> Void
  ) throws(E) {
    clients[i].now = now
    let mark = clients[i].mark
    try clients[i].step(body)
    for (_, packet) in clients[i].sent[mark.sent...] {
      send(toServer: true, client: i, bytes: packet.encoded, packet: packet)
    }
    flush()
  }

  /// Delivers raw bytes to the server as if client `i` sent them (over its uplink).
  public mutating func sendRaw(_ bytes: [UInt8], from i: Int) {
    send(toServer: true, client: i, bytes: bytes, packet: try? Packet.decode(bytes[...]))
    flush()
  }

  /// Replaces the server with a fresh one (a restart: every session forgotten). Datagrams
  /// in flight reach the new one.
  public mutating func restartServer() {
    server = EdgeServer(config: server.config)
    restarts += 1
  }

  // MARK: - Time

  /// When the next thing happens: a server or client deadline, or a delivery.
  public var nextEvent: Instant? {
    var next = server.nextDeadline
    for client in clients {
      if let due = client.session.nextDeadline, next.map({ due < $0 }) ?? true { next = due }
    }
    if let due = inflight.next, next.map({ due < $0 }) ?? true { next = due }
    return next
  }

  /// Moves the clock to `time`, running everything due on the way at its exact instant:
  /// on a tie the server's deadline first, then deliveries, then the clients' deadlines.
  public mutating func run(until time: Instant) {
    var steps = 0
    while step(until: time) {
      steps += 1
      precondition(steps < 5_000_000, "a deadline does not move")
    }
    now = max(now, time)
  }

  public mutating func run(for interval: Interval) { run(until: now + interval) }

  /// Runs the one earliest thing due by `time` (with everything it sends at once), and
  /// says whether there was one. The clock stays at that thing's instant.
  public mutating func step(until time: Instant) -> Bool {
    // One pass over the clients: the earliest deadline, the lowest index on a tie.
    var client: (index: Int, due: Instant)?
    for i in clients.indices {
      if let due = clients[i].session.nextDeadline, client.map({ due < $0.due }) ?? true {
        client = (i, due)
      }
    }
    let serverDue = server.nextDeadline
    let flightDue = inflight.next
    let candidates = [serverDue, flightDue, client?.due]
    guard let next = candidates.compactMap({ $0 }).min(), next <= time else { return false }
    now = max(now, next)
    if let due = serverDue, due <= now {
      ship(server.tick(now: now, wallClock: wallClock))
    } else if let due = flightDue, due <= now, let flight = inflight.pop() {
      deliver(flight)
    } else if let (i, _) = client {
      act(i) { s, now, out in s.advance(to: now, into: &out) }
    }
    flush()
    return true
  }

  // MARK: - Network

  private mutating func send(toServer: Bool, client: Int, bytes: [UInt8], packet: Packet?) {
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
    for _ in 0..<copies {
      var delay = conditions.latency + random.upTo(conditions.jitter)
      if random.chance(conditions.spikeChance) {
        counters.spiked += 1
        delay = delay + conditions.spike
      }
      linkSent[client][direction] += 1
      // Due together: uplinks before downlinks, by client, then in the order sent.
      let order =
        UInt64(direction) << 62 | UInt64(client) << 40
        | (linkSent[client][direction] & (1 << 40 - 1))
      let flight = Flight(
        sentAt: now, at: now + delay, order: order, toServer: toServer, client: client,
        bytes: bytes, packet: packet)
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
    let client = flight.client
    guard flight.toServer ? uplinkUp[client] : downlinkUp[client] else {
      counters.cut += 1
      return
    }
    if loses(flight.toServer, client, flight.packet) { return }
    counters.delivered += 1
    if recordsDeliveries {
      deliveries.append(
        Delivery(
          sentAt: flight.sentAt, at: now, toServer: flight.toServer, client: client,
          packet: flight.packet,
          state: clients[client].state))
    }
    if flight.toServer {
      ship(
        server.receive(flight.bytes[...], from: addresses[client], now: now, wallClock: wallClock)
      )
    } else {
      let bytes = flight.bytes
      clients[client].now = now
      let mark = clients[client].mark
      clients[client].step { s, now, out in
        _ = s.receive(datagram: bytes[...], now: now, into: &out)
      }
      for (_, packet) in clients[client].sent[mark.sent...] {
        send(toServer: true, client: client, bytes: packet.encoded, packet: packet)
      }
    }
  }

  private mutating func ship(_ outgoing: [Outgoing]) {
    for datagram in outgoing {
      let packet = try? Packet.decode(datagram.bytes[...])
      if recordsServerSent {
        serverSent.append((now, datagram.address, packet, datagram.bytes))
      }
      if let client = addresses.firstIndex(of: datagram.address) {
        send(toServer: false, client: client, bytes: datagram.bytes, packet: packet)
      }
    }
  }

  // MARK: - Looking at what happened

  /// The messages the server sent to client `i` (by its current address).
  public func messages(to i: Int) -> [Message] {
    serverSent.filter { $0.to == addresses[i] }.compactMap { $0.packet?.message }
  }

  public func accepts(to i: Int) -> [JoinAccept] {
    messages(to: i).compactMap { if case .accept(let a) = $0 { a } else { nil } }
  }

  public func presenceEntries(to i: Int) -> [PresenceEntry] {
    messages(to: i).flatMap { message -> [PresenceEntry] in
      if case .presence(let digest) = message { Array(digest) } else { [] }
    }
  }
}

extension Harness {
  /// The latest state change.
  public var lastState: ChannelNotification? { stateChanges.last }
}
