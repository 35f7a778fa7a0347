import TetherCore
import TetherSim

@testable import TetherEdge

/// An ``EdgeServer`` and real `ChannelSession` clients (TetherSim's `Harness`) on one
/// virtual clock, joined by a network with no latency whose link to any client can be cut,
/// in one direction or both.
/// No sockets: client datagrams go to ``EdgeServer/receive(_:from:now:wallClock:)`` and the
/// server's go to the client whose ``PeerAddress`` they name.
struct World {
  static let certificate = Array("cert-1".utf8)
  /// The wall clock (unix seconds) at virtual time zero.
  static let wallBase: UInt64 = 1_700_000_000

  var server: EdgeServer
  var clients: [Harness] = []
  var addresses: [PeerAddress] = []
  /// Client to server, per client.
  var uplinkUp: [Bool] = []
  /// Server to client, per client.
  var downlinkUp: [Bool] = []
  /// Both directions: reads true when both are up; setting cuts or heals both.
  var linkUp: [Bool] {
    get { zip(uplinkUp, downlinkUp).map { $0 && $1 } }
    set {
      uplinkUp = newValue
      downlinkUp = newValue
    }
  }
  var now: Instant = .zero
  /// Everything the server sent, decoded (admin answers are not packets: `packet` nil).
  var serverSent: [(at: Instant, to: PeerAddress, packet: Packet?, bytes: [UInt8])] = []
  /// Datagrams the network loses: true drops it (`toServer`, the client, its packet).
  var loses: (_ toServer: Bool, _ client: Int, _ packet: Packet?) -> Bool = { _, _, _ in false }
  private var queue: [(toServer: Bool, client: Int, bytes: [UInt8])] = []

  init(config: EdgeConfig = World.config()) {
    server = EdgeServer(config: config)
  }

  static func config(maxSessions: Int = 10_000) -> EdgeConfig {
    // The fixture's values are valid: these cannot throw.
    try! EdgeConfig(appID: Fixture.appID, appCertificate: certificate, maxSessions: maxSessions)
  }

  static let signer = TokenSigner(appID: Fixture.appID, certificate: certificate)

  var wallClock: UInt64 { Self.wallBase + now.nanoseconds / 1_000_000_000 }

  /// A token for `channel` and `uid`, expiring `seconds` after the current wall clock.
  func token(channel: String = "lobby", uid: UInt32 = 0, expiresIn seconds: UInt64 = 3600)
    -> Token
  {
    Self.token(channel: channel, uid: uid, expiresAt: wallClock + seconds)
  }

  static func token(channel: String = "lobby", uid: UInt32 = 0, expiresAt: UInt64) -> Token {
    let grant = TokenGrant.channel(try! ChannelName(validating: Array(channel.utf8)), uid: uid)
    return try! Token(validating: signer.sign(grant, expiresAt: expiresAt))
  }

  static func address(_ index: Int) -> PeerAddress {
    PeerAddress(bytes: [
      0xC1, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index),
    ])!
  }

  // MARK: - Clients

  @discardableResult
  mutating func addClient(config: ChannelConfig = Fixture.config) -> Int {
    let index = clients.count
    var client = Harness(config: config, seed: UInt64(index) &+ 11)
    client.now = now
    clients.append(client)
    addresses.append(Self.address(index))
    uplinkUp.append(true)
    downlinkUp.append(true)
    return index
  }

  /// Client `i` calls `join_channel`; what it sends is delivered at once.
  mutating func join(_ i: Int, channel: String = "lobby", uid: UInt32 = 0, token: Token? = nil)
    throws
  {
    let name = try ChannelName(validating: Array(channel.utf8))
    let token = token ?? self.token(channel: channel, uid: uid)
    try act(i) { s, now, out throws(TetherError) in
      try s.join(token: token, channel: name, uid: uid, now: now, into: &out)
    }
  }

  mutating func leave(_ i: Int) { act(i) { s, now, out in s.leave(now: now, into: &out) } }

  mutating func renew(_ i: Int, _ token: Token) throws {
    try act(i) { s, now, out throws(TetherError) in try s.renewToken(token, now: now, into: &out) }
  }

  /// Runs `body` on client `i` now, then delivers what it sent.
  mutating func act<E: Error>(
    _ i: Int,
    _ body: (inout ChannelSession<SeededRandom>, Instant, inout ChannelOutput) throws(E) -> Void
  ) throws(E) {
    clients[i].now = now
    let mark = clients[i].mark
    try clients[i].step(body)
    for (_, packet) in clients[i].sent[mark.sent...] {
      queue.append((true, i, packet.encoded))
    }
    flush()
  }

  /// Delivers raw bytes to the server as if client `i` sent them.
  mutating func sendRaw(_ bytes: [UInt8], from i: Int) {
    queue.append((true, i, bytes))
    flush()
  }

  /// Replaces the server with a fresh one (a restart: every session forgotten).
  mutating func restartServer() { server = EdgeServer(config: server.config) }

  // MARK: - Time

  /// Moves the clock to `time`, running the server's and the clients' deadlines at their
  /// exact instants (the server first on a tie).
  mutating func run(until time: Instant) {
    var steps = 0
    while true {
      let serverDue = server.nextDeadline
      let clientDue = clients.indices.compactMap { i in
        clients[i].session.nextDeadline.map { (i, $0) }
      }
      .min { $0.1 < $1.1 }
      let next = [serverDue, clientDue?.1].compactMap { $0 }.min()
      guard let next, next <= time else { break }
      steps += 1
      precondition(steps < 5_000_000, "a deadline does not move")
      now = max(now, next)
      if let serverDue, serverDue <= now {
        ship(server.tick(now: now, wallClock: wallClock))
      } else if let (i, _) = clientDue {
        act(i) { s, now, out in s.advance(to: now, into: &out) }
      }
      flush()
    }
    now = max(now, time)
  }

  mutating func run(for interval: Interval) { run(until: now + interval) }

  // MARK: - Network

  private mutating func flush() {
    while !queue.isEmpty {
      let item = queue.removeFirst()
      guard item.toServer ? uplinkUp[item.client] : downlinkUp[item.client] else { continue }
      if loses(item.toServer, item.client, try? Packet.decode(item.bytes[...])) { continue }
      if item.toServer {
        ship(
          server.receive(
            item.bytes[...], from: addresses[item.client], now: now, wallClock: wallClock))
      } else {
        let bytes = item.bytes
        clients[item.client].now = now
        let mark = clients[item.client].mark
        clients[item.client].step { s, now, out in
          _ = s.receive(datagram: bytes[...], now: now, into: &out)
        }
        for (_, packet) in clients[item.client].sent[mark.sent...] {
          queue.append((true, item.client, packet.encoded))
        }
      }
    }
  }

  private mutating func ship(_ outgoing: [Outgoing]) {
    for datagram in outgoing {
      serverSent.append(
        (now, datagram.address, try? Packet.decode(datagram.bytes[...]), datagram.bytes))
      if let client = addresses.firstIndex(of: datagram.address) {
        queue.append((false, client, datagram.bytes))
      }
    }
  }

  // MARK: - Looking at what happened

  /// The messages the server sent to client `i` (by its current address).
  func messages(to i: Int) -> [Message] {
    serverSent.filter { $0.to == addresses[i] }.compactMap { $0.packet?.message }
  }

  func accepts(to i: Int) -> [JoinAccept] {
    messages(to: i).compactMap { if case .accept(let a) = $0 { a } else { nil } }
  }

  func presenceEntries(to i: Int) -> [PresenceEntry] {
    messages(to: i).flatMap { message -> [PresenceEntry] in
      if case .presence(let digest) = message { Array(digest) } else { [] }
    }
  }
}

extension Harness {
  /// The latest state change.
  var lastState: ChannelNotification? { stateChanges.last }
}
