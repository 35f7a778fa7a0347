// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// A client the world drives: one profile's session on the world's clock (``Harness`` for
/// the channel profile, ``LoginClient`` for the login profile).
public protocol SimClient {
  associatedtype Config
  associatedtype State: Equatable
  /// A client of its own, with `seed` for its cookies and jitter.
  init(config: Config, seed: UInt64)
  var state: State { get }
  /// Its state, as far as the world cares: an accept that reaches it while it is not idle
  /// is taken.
  var phase: ClientPhase { get }
  var nextDeadline: Instant? { get }
  /// Runs what is due by `now`; returns what it sent.
  mutating func advance(to now: Instant) -> [Sent]
  /// From now on it speaks protocol version 2 through `link` (a ``World`` gives every
  /// client one as it adds it: the edge speaks nothing else).
  mutating func speak(_ link: SecureLink<SimCrypto>)
  /// How many actions its session wrote so far (notifications and datagrams, before any
  /// layer): what the ``Attacker`` must not change.
  var sessionWrites: Int { get }
  /// Over version 2: what its layer handed the session for the last datagram it received,
  /// as a packet under the session's cookie (nil: the layer kept it from the session).
  var lastHanded: Packet? { get }
  /// A datagram from the server reaches it at `now`; `generation` is the server session of
  /// this client it was sent in (``World/ServerSide/generation``). Returns what it sent.
  mutating func receive(_ bytes: [UInt8], _ packet: Packet?, generation: UInt64, now: Instant)
    -> [Sent]
}

/// DISCONNECTED, FAILED or ABORTED (nothing sent, nothing taken); CONNECTING or
/// RECONNECTING; CONNECTED.
public enum ClientPhase { case idle, attempting, connected }

extension SimClient where State: RawRepresentable, State.RawValue == Int32 {
  /// Both profiles number their states alike (docs/BEHAVIOUR.md §1, §2): 2 CONNECTING,
  /// 3 CONNECTED, 4 RECONNECTING; the others are idle.
  public var phase: ClientPhase {
    switch state.rawValue {
    case 3: .connected
    case 2, 4: .attempting
    default: .idle
    }
  }
}

/// A datagram a client sent (protocol version 2's bytes), and the session's packet it stands
/// for (``WireView``).
public typealias Sent = (bytes: [UInt8], packet: Packet?)

/// The channel profile's world: real `ChannelSession` clients (each a ``Harness``), the edge
/// tests' world and the seed timeline's.
public typealias SimWorld = World<Harness>
/// The login profile's world: real `LoginSession` clients (each a ``LoginClient``).
public typealias LoginWorld = World<LoginClient>
/// The scenarios' world (``ScenarioRun``), of either profile. Every world speaks protocol
/// version 2: the edge and the clients draw from the world's one seeded stream, watched by
/// its ``NonceOracle``.
public typealias SecureWorld<Client: SimClient> = World<Client>

/// The app certificate of every simulated server (a short one, as people type).
let simCertificate = Array("cert-1".utf8)

/// The real ``EdgeServer`` (sans-IO) and real clients of one profile on one virtual clock,
/// joined by a simulated network.
///
/// No sockets: client datagrams go to ``EdgeServer/receive(_:from:now:wallClock:)`` and the
/// server's go to the client whose ``PeerAddress`` they name. Each direction of each
/// client's link can be cut (``uplinkUp``, ``downlinkUp``) and has its own
/// ``LinkConditions``: latency, jitter, spikes, loss and duplication, drawn from a seeded
/// generator, so a run is a pure function of its seed. By default every link is perfect
/// and instant: a datagram is handled at the instant it is sent.
///
/// With ``watchesServer`` the world also follows the server's side of every client after
/// each input (``ServerSide``, World+Watch.swift) and checks the rules only the server's side
/// shows (``violations``).
///
/// Every client speaks protocol version 2 through its own ``SecureLink`` on the world's
/// ``SimCrypto``, and what goes on the wire is version 2's bytes. The world watches the
/// sessions' own packets (the messages version 2's payloads carry): what each client's session wrote (before its layer sealed it:
/// ``RecordedSession``) and, for the edge's sealed datagrams, what the edge sealed (read
/// from the oracle's journal, ``WireView``), under the client's own cookie. The edge keys a
/// version 2 session by its session id, so the world follows, per client, the session ids
/// its CONFIRMs named (``ServerSide/sessions``). Every seal of the run is shown to the
/// oracle; a (key, nonce) sealed twice is a violation ("nonce").
public struct World<Client: SimClient> {
  public static var certificate: [UInt8] { simCertificate }
  /// The wall clock (unix seconds) at virtual time zero.
  public static var wallBase: UInt64 { 1_700_000_000 }
  public static var adminAddress: PeerAddress { PeerAddress(bytes: [0xAD, 0x01])! }

  public var server: EdgeServer<SimCrypto>
  /// The seam the edge and every client seal through; its random stream outlives a restart.
  public let crypto: SimCrypto
  public var clients: [Client] = []
  public var addresses: [PeerAddress] = []
  /// Per client: whether its uplink (client to server) and its downlink are up.
  public var uplinkUp: [Bool] = []
  public var downlinkUp: [Bool] = []
  /// Both directions: reads true when both are up; setting cuts or heals both.
  public var linkUp: [Bool] {
    get { zip(uplinkUp, downlinkUp).map { $0 && $1 } }
    set {
      uplinkUp = newValue
      downlinkUp = newValue
    }
  }
  /// Per client: the conditions of its uplink and of its downlink.
  public var uplink: [LinkConditions] = []
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
  public internal(set) var counters = NetworkCounters()
  public private(set) var restarts = 0
  /// When the server last restarted.
  public private(set) var lastRestart: Instant?
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
  private var adminNonce: UInt64 = 1
  /// The attacker on every client's path, if the run has one.
  public var attacker: Attacker?
  private var attackOrder: UInt64 = 0
  /// How many of the oracle's repeats are violations already.
  private var reportedRepeats = 0

  /// With it: the server's side of each client, the rules broken there while handling an
  /// input, and how many such rules were evaluated.
  public let watchesServer: Bool
  public internal(set) var sides: [ServerSide] = []
  public internal(set) var violations: [Violation] = []
  public internal(set) var serverChecks: UInt64 = 0
  /// Set aside (and count) the late datagrams of another login server session, as runs did
  /// before the client told them apart by the server-session number (the default).
  public var setsAsideLate = false

  /// One datagram as it arrived. `state` is the client's state just before a downlink
  /// datagram reached it (for an uplink one, its state when the server got it).
  public typealias Delivery = (
    at: Instant, toServer: Bool, client: Int, packet: Packet?, state: Client.State
  )

  public init(
    config: EdgeConfig = World.config(), crypto: SimCrypto, networkSeed: UInt64 = 1,
    watchesServer: Bool = false
  ) {
    var config = config
    if watchesServer { config.recordsEvents = true }
    self.crypto = crypto
    server = EdgeServer(config: config, crypto: crypto)
    self.networkSeed = networkSeed
    self.watchesServer = watchesServer
  }

  public static func config(maxSessions: Int = 10_000) -> EdgeConfig {
    // The fixture's values are valid: these cannot throw.
    var config = try! EdgeConfig(
      appID: Fixture.appID, appCertificate: simCertificate, maxSessions: maxSessions)
    config.firstLoginSession = 0  // deterministic runs
    return config
  }

  public var wallClock: UInt64 { Self.wallBase + now.nanoseconds / 1_000_000_000 }

  public static func address(_ index: Int) -> PeerAddress {
    PeerAddress(bytes: [
      0xC1, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index),
    ])!
  }

  // MARK: - Clients

  /// Adds `client` on a link that is up and perfect; returns its index.
  public mutating func add(_ client: Client) -> Int {
    let index = clients.count
    var client = client
    client.speak(SecureLink(crypto: crypto))
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
    sides.append(ServerSide())
    return index
  }

  /// Runs `body` on client `i` now (a call of the app's), then sends what it sent.
  public mutating func perform<E: Error>(
    _ i: Int, _ body: (inout Client, Instant) throws(E) -> [Sent]
  ) throws(E) {
    let sent = try body(&clients[i], now)
    send(sent, from: i)
    flush()
  }

  /// The operator kicks `user`'s login session (and bans it for `banSeconds`) through the
  /// admin entry point.
  public mutating func kickUser(_ user: UserID, banSeconds: UInt32) {
    adminNonce &+= 1
    admin(
      AdminKickUser(userID: user, banSeconds: banSeconds, unixTime: wallClock, nonce: adminNonce)
        .sealed(appID: Fixture.appID, certificate: simCertificate))
  }

  /// The operator kicks `uid` from `channel` (and bans it for `banSeconds`).
  public mutating func kick(uid: UInt32, in channel: String, banSeconds: UInt32) {
    guard let channel = try? ChannelName(validating: Array(channel.utf8)) else { return }
    adminNonce &+= 1
    let kick = AdminKick(
      channel: channel, uid: uid, banSeconds: banSeconds, unixTime: wallClock, nonce: adminNonce)
    admin(kick.sealed(appID: Fixture.appID, certificate: simCertificate))
  }

  /// Sends `request` to the edge from the admin's address and delivers what it sends the
  /// clients (sealed, through the network); returns the edge's answer to the admin.
  @discardableResult
  public mutating func admin(_ request: [UInt8]) -> [UInt8]? {
    let out = server.receive(request[...], from: Self.adminAddress, now: now, wallClock: wallClock)
    ship(out, input: nil)
    flush()
    return out.first { $0.address == Self.adminAddress }?.bytes
  }

  /// Feeds the edge what its fleet's bus said (a model bus in the tests: one world per
  /// edge, their clocks run together) and delivers what it sends the clients.
  public mutating func fleet(_ inputs: [FleetInput]) {
    guard !inputs.isEmpty else { return }
    ship(server.fleet(inputs, now: now, wallClock: wallClock), input: nil)
    flush()
  }

  /// Replaces the server with a fresh one (a restart: every session forgotten). Datagrams
  /// in flight reach the new one.
  public mutating func restartServer() {
    restarts += 1
    lastRestart = now
    // A restarted server numbers its login sessions from elsewhere (a real one from a
    // random start), so its sessions are not taken for the previous run's.
    var config = server.config
    config.firstLoginSession &+= UInt32(restarts) &* 1_000_003
    // So does its fleet incarnation: its previous run's records are not its own.
    config.fleetIncarnation = config.fleetIncarnation.map { $0 &+ UInt64(restarts) &* 7_919 }
    // The same seam: the world's stream goes on, so the new edge draws a new ticket key,
    // cookie secret and epoch (a server of its own stream would draw the old ones again).
    server = EdgeServer(config: config, crypto: crypto)
    for i in sides.indices {
      sides[i].held = false
      sides[i].channels = []
    }
  }

  // MARK: - Time

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
      if let due = clients[i].nextDeadline, client.map({ due < $0.due }) ?? true {
        client = (i, due)
      }
    }
    let serverDue = server.nextDeadline
    let flightDue = inflight.next
    let candidates = [serverDue, flightDue, client?.due]
    guard let next = candidates.compactMap({ $0 }).min(), next <= time else { return false }
    now = max(now, next)
    if let due = serverDue, due <= now {
      ship(server.tick(now: now, wallClock: wallClock), input: nil)
    } else if let due = flightDue, due <= now, let flight = inflight.pop() {
      deliver(flight)
    } else if let (i, _) = client {
      perform(i) { client, now in client.advance(to: now) }
    }
    flush()
    return true
  }

  // MARK: - Network

  /// Sends `bytes` to the server as if client `i` had sent them (a replay, a forgery), over
  /// its uplink as it is.
  public mutating func sendRaw(_ bytes: [UInt8], from i: Int) {
    send(toServer: true, client: i, bytes: bytes, packet: try? Packet.decode(bytes[...]))
    flush()
  }

  private mutating func send(_ sent: [Sent], from i: Int) {
    for (bytes, packet) in sent {
      if watchesServer, let packet { noteSent(packet, by: i) }
      if let packet, bytes.first == WireView.confirmKind,
        let id = WireView.sessionID(bytes)
      {
        sides[i].named(id, cookie: packet.cookie)
      }
      send(
        toServer: true, client: i, bytes: bytes, packet: packet,
        generation: sides[i].acceptedGeneration)
    }
  }

  private mutating func send(
    toServer: Bool, client: Int, bytes: [UInt8], packet: Packet?, generation: UInt64 = 0
  ) {
    counters[.sent] += 1
    guard toServer ? uplinkUp[client] : downlinkUp[client] else {
      counters[.droppedByCut] += 1
      return
    }
    let conditions = toServer ? uplink[client] : downlink[client]
    let direction = toServer ? 0 : 1
    var random = linkRandom[client][direction]
    defer { linkRandom[client][direction] = random }
    if random.chance(conditions.loss) {
      counters[.lost] += 1
      return
    }
    let copies = random.chance(conditions.duplicate) ? 2 : 1
    if copies == 2 { counters[.duplicated] += 1 }
    for _ in 0..<copies {
      var delay = conditions.latency + random.upTo(conditions.jitter)
      if random.chance(conditions.spikeChance) {
        counters[.delaySpiked] += 1
        delay = delay + conditions.spike
      }
      linkSent[client][direction] += 1
      // Due together: uplinks before downlinks, by client, then in the order sent.
      let order =
        UInt64(direction) << 62 | UInt64(client) << 40
        | (linkSent[client][direction] & (1 << 40 - 1))
      let flight = Flight(
        at: now + delay, order: order, toServer: toServer, client: client,
        bytes: bytes, packet: packet, generation: generation)
      if flight.at < latestScheduled[client][direction] {
        counters[.reordered] += 1
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
    checkNonces()
  }

  /// A (key, nonce) sealed twice since the last look is a violation.
  private mutating func checkNonces() {
    let oracle = crypto.oracle
    guard oracle.repeats.count > reportedRepeats else { return }
    for (kind, nonce) in oracle.repeats[reportedRepeats...] {
      fail("nonce", 0, "a \(kind.rawValue) key sealed nonce \(nonce) twice")
    }
    reportedRepeats = oracle.repeats.count
  }

  private mutating func deliver(_ flight: Flight) {
    let i = flight.client
    if flight.forged { return attack(flight) }
    guard flight.toServer ? uplinkUp[i] : downlinkUp[i] else {
      counters[.droppedByCut] += 1
      return
    }
    if loses(flight.toServer, i, flight.packet) { return }
    if setsAsideLate, setsAside(flight) { return }
    counters[.delivered] += 1
    if flight.toServer {
      crypto.oracle.clearJournal()
      // A DATA datagram reaches only the session its id names: under an id the edge does
      // not hold (an older session's keys, a restarted edge) it is no hearing of the
      // client's session, whatever its cookie. A CONFIRM is one only when it makes (or
      // resumes into) the session; the edge answers a repeat of it with the ACCEPT again
      // but does not take it as hearing the session (§12.6, step 4).
      let named: Bool
      switch (flight.bytes.first, WireView.sessionID(flight.bytes)) {
      case (WireView.dataKind, let id?): named = holds(id)
      case (WireView.confirmKind, let id?): named = !holds(id)
      default: named = true
      }
      let refused = server.counters.replayed &+ server.counters.unopened
      let out = server.receive(
        flight.bytes[...], from: addresses[i], now: now, wallClock: wallClock)
      // And the edge opens nothing twice: a copy or a replay (or a datagram that does not
      // open) reaches no session either.
      let heard = named && server.counters.replayed &+ server.counters.unopened == refused
      if recordsDeliveries, heard {
        deliveries.append((now, flight.toServer, i, flight.packet, clients[i].state))
      }
      ship(out, input: (i, flight.bytes.count, heard ? flight.packet : nil))
      if attacker != nil, let (bytes, after, moved) = attacker?.saw(sent: flight.bytes, by: i) {
        attackOrder += 1
        let forged = Flight(
          at: now + after, order: 3 << 62 | attackOrder, toServer: true, client: i,
          bytes: bytes, forged: true, source: moved ? Self.attackerAddress : nil)
        if after == .zero { queue.append(forged) } else { inflight.push(forged) }
      }
      return
    }
    let active = clients[i].phase != .idle
    let state = clients[i].state
    let sent = clients[i].receive(
      flight.bytes, flight.packet, generation: flight.generation, now: now)
    // The checks see what the layer handed the session: nothing for a copy, a replay, or
    // one that does not open; the refusal it stands for for a sealed one.
    let packet = clients[i].lastHanded
    if recordsDeliveries { deliveries.append((now, flight.toServer, i, packet, state)) }
    // What it sent in answer still goes out under the server session it had taken before.
    send(sent, from: i)
    if attacker != nil, let (bytes, after) = attacker?.saw(flight.bytes, to: i) {
      attackOrder += 1
      let forged = Flight(
        at: now + after, order: 3 << 62 | attackOrder, toServer: false, client: i, bytes: bytes,
        forged: true)
      if after == .zero { queue.append(forged) } else { inflight.push(forged) }
    }
    if watchesServer, active, let packet, packet.cookie == sides[i].cookie,
      packet.message.isAccept
    {
      sides[i].acceptedGeneration = flight.generation
    }
  }

  /// The attacker's datagram reaches client `i`: nothing of its session may change (no
  /// message handed to it but a copy of its own RESET, nothing written, the same state).
  private mutating func attack(_ flight: Flight) {
    let i = flight.client
    guard !flight.toServer else { return attackEdge(flight) }
    // What is due now runs first, so the session's own deadlines are not taken for the
    // attacker's doing.
    send(clients[i].advance(to: now), from: i)
    let state = clients[i].state
    let writes = clients[i].sessionWrites
    send(clients[i].receive(flight.bytes, nil, generation: 0, now: now), from: i)
    // A RESET has no counter: a copy of the session's own is taken again while its id is
    // current (§12.9), and must change nothing either. Anything else must not reach it.
    let copyOfReset =
      flight.bytes.first == WireView.resetKind
      && attacker?.heard[i].contains(flight.bytes) == true
    if (clients[i].lastHanded != nil && !copyOfReset) || clients[i].sessionWrites != writes
      || clients[i].state != state
    {
      fail(
        "attacker", i,
        "\(flight.bytes.count) bytes (kind \(flight.bytes.first ?? 0)) changed the session: "
          + "handed \(clients[i].lastHanded.map { "\($0.message)" } ?? "nothing"), "
          + "\(clients[i].sessionWrites - writes) writes, \(state) -> \(clients[i].state)")
    }
  }

  /// Where the attacker sends from when it moves a client's datagram.
  public static var attackerAddress: PeerAddress { PeerAddress(bytes: [0xBA, 0xD0])! }

  /// The attacker's datagram reaches the edge (a client's own, again, from its address or
  /// another): the edge makes and ends no session, and sends another address at most
  /// what it received from it. What the edge answers the client's address goes out (a
  /// RESPONSE to a replayed INIT, the ACCEPT again for a replayed CONFIRM: the edge's own,
  /// which the client's layer must take as it takes any).
  private mutating func attackEdge(_ flight: Flight) {
    let i = flight.client
    let source = flight.source ?? addresses[i]
    let tables = (server.sessionCount, server.loginSessionCount)
    crypto.oracle.clearJournal()
    let out = server.receive(flight.bytes[...], from: source, now: now, wallClock: wallClock)
    if tables != (server.sessionCount, server.loginSessionCount) {
      fail(
        "attacker", i,
        "\(flight.bytes.count) bytes (kind \(flight.bytes.first ?? 0)) from "
          + "\(source == addresses[i] ? "its address" : "another") changed the edge's "
          + "sessions: \(tables) -> \((server.sessionCount, server.loginSessionCount))")
    }
    if source != addresses[i] {
      let back = out.filter { $0.address == source }.reduce(0) { $0 + $1.bytes.count }
      if back > flight.bytes.count {
        fail("amplification", i, "\(back) bytes answered a moved \(flight.bytes.count)")
      }
    }
    ship(out.filter { $0.address != Self.attackerAddress }, input: nil)
  }

  /// Everything the server sent in answer to one input (`input`: from which client, its
  /// size and packet; nil for a tick or an admin request): the server's side is watched,
  /// then the datagrams go out.
  private mutating func ship(
    _ outgoing: [Outgoing], input: (client: Int, size: Int, packet: Packet?)?
  ) {
    let packets = outgoing.map { edgePacket($0) }
    crypto.oracle.clearJournal()
    if watchesServer { watch(outgoing, packets, input: input) }
    for (datagram, packet) in zip(outgoing, packets) {
      if recordsServerSent {
        serverSent.append((now, datagram.address, packet, datagram.bytes))
      }
      guard let i = addresses.firstIndex(of: datagram.address) else { continue }
      if watchesServer, let packet { noteReceived(packet, by: i) }
      send(
        toServer: false, client: i, bytes: datagram.bytes, packet: packet,
        generation: sides[i].generation)
    }
    if watchesServer { noteChannels() }
  }

  /// The session's packet an edge datagram stands for (``WireView``), under the cookie of
  /// the client session whose id it names; nil for what no session's packet stands for (an
  /// admin answer, a handshake answer).
  private func edgePacket(_ datagram: Outgoing) -> Packet? {
    let oracle = crypto.oracle
    guard let i = addresses.firstIndex(of: datagram.address),
      let id = WireView.sessionID(datagram.bytes),
      let cookie = sides[i].sessions.last(where: { $0.id == id })?.cookie
    else { return nil }
    if datagram.bytes.first == WireView.resetKind {
      return Packet(cookie: cookie, message: .sessionUnknown)
    }
    guard let payload = oracle.payload(of: datagram.bytes[...]),
      let message = WireView.message(payload: payload, fromDevice: false, renewal: nil)
    else { return nil }
    return Packet(cookie: cookie, message: message)
  }

  /// A version 2 token of `grant` expiring at `expiresAt` (unix seconds; 0: never), minted
  /// by ``TokenMinter`` from the world's stream (so a run's tokens are a function of its
  /// seed, and their seals are the oracle's to watch).
  public func token(_ grant: TokenGrant, expiresAt: UInt64) -> Token {
    let minter = TokenMinter(crypto: crypto, keys: server.config.certificateKeys)
    // A minted token is 337 printable bytes: it validates.
    return try! Token(
      validating: Array(minter.mint(appID: Fixture.appID, grant: grant, expiresAt: expiresAt).utf8))
  }

  /// A version 2 token of `grant` for any world's edge (they share the certificate),
  /// minted from libsodium's own random bytes: for a test that needs a token before (or
  /// without) a world. A world's run stays a function of its seed: what a token's random
  /// bytes change is only the bytes of the handshakes made with it.
  public static func token(_ grant: TokenGrant, expiresAt: UInt64) -> Token {
    // The certificate is not empty: the keys derive.
    let minter = try! TokenMinter(certificate: simCertificate)
    return try! Token(
      validating: Array(minter.mint(appID: Fixture.appID, grant: grant, expiresAt: expiresAt).utf8))
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

extension World {
  /// A world whose edge and clients draw from the seeded stream of `seed` (1 by default: the
  /// edge tests' worlds are all alike).
  public init(
    config: EdgeConfig = World.config(), seed: UInt64 = 1, networkSeed: UInt64 = 1,
    watchesServer: Bool = false
  ) {
    self.init(
      config: config, crypto: SimCrypto(seed: seed), networkSeed: networkSeed,
      watchesServer: watchesServer)
  }
}
