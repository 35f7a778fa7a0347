// SPDX-License-Identifier: Apache-2.0
@_spi(Link) import TetherCore

#if canImport(Glibc)
  import Glibc
#endif

/// An input of fuzz-link under construction, in its own format: flags, the seed, then
/// operations (``LinkOperation``). The handshake answers it carries as bytes are made by the
/// edge's half (``NullEdge``, on TetherCore's EdgeHandshake) for the INIT the device sent
/// when the program so far runs: the seed runs the driver to find it.
struct LinkProgram {
  var bytes: [UInt8]
  let login: Bool

  init(login: Bool, flags: UInt8 = 0) {
    self.login = login
    bytes = [flags | (login ? 1 : 0)] + LinkDriver<ChannelSession<SeededRandom>>.bigEndian(1)
  }

  mutating func op(_ operation: LinkOperation, _ operands: [UInt8] = []) {
    bytes.append(operation.rawValue)
    bytes += operands
  }

  mutating func wait(seconds: UInt16) {
    op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
  }

  /// A RESPONSE to the last INIT made by the driver (session `id`, ticket lifetime 10 s).
  mutating func respond(id: UInt64) {
    op(.respond, [4] + LinkDriver<ChannelSession<SeededRandom>>.bigEndian(id) + [3])
  }

  /// The profile's accept under the last CONFIRM's keys.
  mutating func accept(resumed: Bool = false) { op(.accept, [resumed ? 1 : 0, 0]) }

  /// `datagram` as the input's bytes, patched by `mode` (``LinkDriver/answer(_:)``).
  mutating func raw(_ datagram: [UInt8], mode: UInt8 = 0) {
    op(.answer, [mode, UInt8(datagram.count >> 8), UInt8(datagram.count & 0xFF)] + datagram)
  }

  /// Joined (or logged in), answered and accepted as session `id`.
  /// The session id ``live(id:)`` gives by default.
  static var liveID: UInt64 { 0x0102_0304_0000_0001 }

  mutating func live(id: UInt64 = liveID) {
    respond(id: id)
    accept()
    wait(seconds: 1)
  }

  /// Where the program so far leaves the device: its last INIT, the session id of its last
  /// CONFIRM, the confirmed session's id, and its state.
  func run() -> (lastInit: [UInt8], confirmID: UInt64, sessionID: UInt64, state: String) {
    var copy = bytes
    let reached: ([UInt8], UInt64, UInt64, String)? = copy.withUnsafeMutableBytes { raw in
      guard let base = raw.baseAddress else { return nil }
      var input = FuzzInput(base, raw.count)
      let flags = input.u8()
      if login {
        let d = LinkDriver<LoginSession<SeededRandom>>.fuzz(&input, flags: flags)
        return d.map {
          ($0.lastInit, $0.confirmID, $0.real.link.sessionID, "\($0.real.session.state)")
        }
      }
      let d = LinkDriver<ChannelSession<SeededRandom>>.fuzz(&input, flags: flags)
      return d.map {
        ($0.lastInit, $0.confirmID, $0.real.link.sessionID, "\($0.real.session.state)")
      }
    }
    guard let reached else { fatalError("the seed's config was refused") }
    return reached
  }

  /// The last INIT the device sent when the program so far runs.
  func lastInit() -> ArraySlice<UInt8> {
    let initiation = run().lastInit
    guard !initiation.isEmpty else { fatalError("the seed sent no INIT") }
    return initiation[...]
  }
}

enum LinkSeeds {
  static let crypto = NullSeam(random: NullRandom(seed: 0))

  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds: [(name: String, bytes: [UInt8])] = []
    for login in [false, true] {
      let prefix = login ? "login" : "channel"
      /// A seed, checked to leave the device live on session `live` (0: not live).
      func add(
        _ name: String, flags: UInt8 = 0, live: UInt64 = 0, _ build: (inout LinkProgram) -> Void
      ) {
        var program = LinkProgram(login: login, flags: flags)
        build(&program)
        let reached = program.run()
        if getenv("TETHER_FUZZ_SEED_TRACE") != nil {
          print(
            "\(prefix)-\(name): \(reached.state), confirm \(reached.confirmID), live \(reached.sessionID)"
          )
        }
        require(reached.sessionID == live, "seed \(prefix)-\(name) reached \(reached)")
        seeds.append(("\(prefix)-\(name)", program.bytes))
      }
      add("init-out") { $0.wait(seconds: 30) }
      add("confirm-held") { p in
        p.respond(id: 7)
        p.wait(seconds: 5)
      }
      add("live", live: LinkProgram.liveID) { p in
        p.live()
        p.op(.message, [2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1])  // HEARTBEAT_ACK
        p.wait(seconds: 10)
      }
      add("live-raw", live: 9) { p in
        let response = NullEdge.response(to: p.lastInit(), sessionID: 9, crypto: crypto)!
        p.raw(response)
        let accept = NullEdge.payload(NullEdge.accept(login: login))
        p.raw(NullEdge.data(sessionID: 9, counter: 0, payload: accept))
        p.wait(seconds: 3)
      }
      add("reset-rejoin", live: 11) { p in
        p.live()
        p.op(.reset, [1])
        p.respond(id: 11)
        p.accept(resumed: true)
        p.wait(seconds: 5)
      }
      add("network-rejoin", live: 12) { p in
        p.live()
        p.op(.other, [0])
        p.respond(id: 12)
        p.accept(resumed: true)
        p.wait(seconds: 5)
      }
      add("cookie", live: LinkProgram.liveID) { p in
        p.raw(NullEdge.cookieReply(to: p.lastInit(), crypto: crypto)!)
        p.live()
      }
      add("refuse-clear") { p in
        p.raw(NullEdge.refuseClear(to: p.lastInit())!)
        p.wait(seconds: 5)
      }
      add("refuse-sealed") { p in
        p.raw(NullEdge.refusal(to: p.lastInit(), reason: 2, detail: 1, crypto: crypto)!)
        p.wait(seconds: 5)
      }
      add("refuse-at-confirm") { p in
        p.respond(id: 13)
        p.op(.message, [1, 4, 1, 0])  // the profile's refusal, detail 1, under the CONFIRM's keys
        p.wait(seconds: 5)
      }
      add("renew", live: LinkProgram.liveID) { p in
        p.live()
        p.op(.renew, [1])
        p.op(.message, [7, 1, 0, 1, 0, 0, 0, 1])  // TOKEN_RENEWED, accepted
        p.wait(seconds: 5)
      }
      add("path-challenge", live: LinkProgram.liveID) { p in
        p.live()
        let challenge = NullEdge.data(
          sessionID: 0, counter: 0, payload: [0x8D, 1, 2, 3, 4, 5, 6, 7, 8])
        p.raw(challenge, mode: 1 | 2 | 4 | 8)
        p.wait(seconds: 2)
      }
      add("notices", live: login ? 0 : LinkProgram.liveID) { p in
        p.live()
        p.op(.message, [4, 1, 0, 1])  // KICK
        p.op(.message, [5, 0, 1])  // TOKEN_EXPIRED
        p.wait(seconds: 5)
      }
      add("forged-then-genuine", live: LinkProgram.liveID) { p in
        p.live()
        var forged = NullEdge.data(sessionID: 0, counter: 0x7FFF_FFFF, payload: [0x86, 0, 0])
        forged[forged.count - 1] = 1
        p.raw(forged, mode: 1 | 8)
        p.op(.replay, [0])
        p.op(.message, [2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1])
        p.wait(seconds: 3)
      }
      add("end") { p in
        p.live()
        p.op(.end)
        p.wait(seconds: 5)
      }
      add("tiny-limits", flags: 8, live: 14) { p in
        p.live()
        p.wait(seconds: 20)
        p.respond(id: 14)
        p.accept()
        p.wait(seconds: 20)
      }
      add("expired-token", flags: 4) { p in
        p.op(.end)
        p.wait(seconds: 2)
        p.op(.start, [2])
        p.wait(seconds: 5)
      }
      add("version-1-token") { p in
        p.op(.end)
        p.wait(seconds: 2)
        p.op(.start, [3])
        p.wait(seconds: 5)
      }
      if login {
        add("channels", live: LinkProgram.liveID) { p in
          p.live()
          p.op(.other, [1])
          p.op(.message, [8, 0, 1, 0, 1])  // CHANNEL_ACK
          p.op(.message, [3, 0, 0, 0, 0, 0, 1, 0, 1])  // MEMBER_EVENTS
          p.wait(seconds: 5)
        }
      } else {
        add("presence", live: LinkProgram.liveID) { p in
          p.live()
          p.op(.message, [3, 1, 0, 0, 0, 0, 1])  // PRESENCE
          p.wait(seconds: 5)
        }
      }
    }
    return seeds
  }
}
