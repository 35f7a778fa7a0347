// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherSim
import TetherSodium

/// A real session behind a ``SecureLink`` on libsodium (``SodiumCrypto``, or a wrapper
/// around it), talking to a ``MemoryEdge``: the driver's loop in a few lines (each entry
/// point, then the layer's rewrite; each datagram through the layer), with what the device
/// sent and what the app was told recorded.
struct LinkRig<Session: LinkSession, Crypto: SessionCrypto> {
  var edge: MemoryEdge
  var session: Session
  var link: SecureLink<Crypto>
  var output = SessionOutput<Session.Notification>()
  var now = Instant(nanoseconds: 1_000_000_000_000)
  /// Every datagram the device sent, in order; and every notification.
  var sent: [[UInt8]] = []
  var notes: [Session.Notification] = []
  /// Whether the edge's answers reach the device (false: a dead downlink).
  var downlink = true

  init(edge: MemoryEdge, session: Session, crypto: Crypto, limits: KeyLimits = .standard) {
    self.edge = edge
    self.session = session
    link = SecureLink(crypto: crypto, limits: limits)
  }

  /// Calls one entry point of the session, then rewrites what it wrote.
  mutating func call(
    _ body: (inout Session, inout SessionOutput<Session.Notification>, Instant) throws -> Void
  ) rethrows {
    let first = output.actions.count
    try body(&session, &output, now)
    link.secure(&output, from: first, session: &session, now: now)
  }

  /// One datagram to the device, through the layer.
  mutating func deliver(_ datagram: [UInt8]) {
    link.receive(datagram[...], session: &session, now: now, into: &output)
  }

  /// Takes the output: the datagrams the device sends now, the notifications recorded.
  mutating func drain() -> [[UInt8]] {
    let datagrams = output.drain(notes: &notes)
    sent += datagrams
    return datagrams
  }

  /// Exchanges datagrams with the edge until neither side has more to send.
  mutating func pump() throws {
    for _ in 0..<20 {
      let datagrams = drain()
      if datagrams.isEmpty { return }
      for datagram in datagrams {
        for answer in try edge.handle(datagram[...]) where downlink { deliver(answer) }
      }
    }
  }

  /// Moves time on by `interval` in steps of 100 ms, pumping at each.
  mutating func run(for interval: Interval) throws {
    let end = now + interval
    while now < end {
      now = now + .milliseconds(100)
      call { session, output, now in session.advance(to: now, into: &output) }
      try pump()
    }
  }

  /// The kinds (byte 0) of what the device sent from `index` on.
  func kinds(from index: Int = 0) -> [UInt8] { sent[index...].map { $0.first ?? 0 } }
}

extension LinkRig where Session == ChannelSession<SeededRandom> {
  init(edge: MemoryEdge, crypto: Crypto, limits: KeyLimits = .standard) throws {
    let session = try ChannelSession(
      config: ChannelConfig(appID: try AppID(validating: Array("app".utf8))),
      random: SeededRandom(seed: 7))
    self.init(edge: edge, session: session, crypto: crypto, limits: limits)
  }

  mutating func join(_ token: Token, channel: String = "room", uid: UInt32 = 7) throws {
    let name = try ChannelName(validating: Array(channel.utf8))
    try call { session, output, now in
      try session.join(token: token, channel: name, uid: uid, now: now, into: &output)
    }
  }
}

extension LinkRig where Session == ChannelSession<SeededRandom>, Crypto == SodiumCrypto {
  init(edge: MemoryEdge, limits: KeyLimits = .standard) throws {
    try self.init(edge: edge, crypto: SodiumCrypto(), limits: limits)
  }
}

extension LinkRig where Session == LoginSession<SeededRandom>, Crypto == SodiumCrypto {
  init(edge: MemoryEdge) throws {
    let session = try LoginSession(
      config: LoginConfig(appID: try AppID(validating: Array("app".utf8))),
      random: SeededRandom(seed: 9))
    self.init(edge: edge, session: session, crypto: SodiumCrypto())
  }

  mutating func login(_ token: Token, user: String = "alice") throws {
    let userID = try UserID(validating: Array(user.utf8))
    try call { session, output, now in
      try session.login(token: token, userID: userID, now: now, into: &output)
    }
  }
}

extension SessionOutput where Notification: SessionNotification {
  /// Empties the output: its datagrams returned in order, its notifications appended to
  /// `notes` (the test devices' one way to take what a session and its layer wrote).
  mutating func drain(notes: inout [Notification]) -> [[UInt8]] {
    var datagrams: [[UInt8]] = []
    for action in actions {
      switch action {
      case .send(let datagram): datagrams.append(Array(bytes(of: datagram)))
      case .notify(let note): notes.append(note)
      }
    }
    removeAll()
    return datagrams
  }
}
