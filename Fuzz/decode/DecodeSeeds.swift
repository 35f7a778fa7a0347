// SPDX-License-Identifier: Apache-2.0
@_spi(Link) import TetherCore

/// fuzz-decode's seeds: each a selector byte (FuzzDecode.swift) and bytes the real encoders
/// wrote: the edge's payloads and answers (``NullEdge``, on TetherCore's EdgeHandshake), the
/// device's INIT, request, CONFIRM and payloads (its handshake and layer, driven).
enum DecodeSeeds {
  static func all() -> [(name: String, bytes: [UInt8])] {
    var seeds: [(name: String, bytes: [UInt8])] = []
    func add(_ name: String, _ selector: UInt8, _ bytes: [UInt8]?) {
      guard let bytes else { fatalError("seed \(name) could not be made") }
      seeds.append((name, [selector] + bytes))
    }
    // The server's payloads, to both profiles' sessions.
    for (name, packet) in Samples.packets(cookie: 0) where packet.encoded[3] >= 0x81 {
      if case .sessionUnknown = packet.message { continue }
      let payload = NullEdge.payload(packet.message)
      add("channel-\(name)", 0, payload)
      add("login-\(name)", 1, payload)
    }
    let challenge: [UInt8] = [0x8D, 1, 2, 3, 4, 5, 6, 7, 8]
    add("channel-path-challenge", 0, challenge)
    add("login-path-challenge", 1, challenge)
    // The handshake's answers to the open attempt, its nonce patched in (0x80) or not.
    let initiation = Decoding.attempt.initiation[...]
    let crypto = Decoding.crypto
    let response = NullEdge.response(to: initiation, sessionID: 77, crypto: crypto)
    let answers: [(String, [UInt8]?)] = [
      ("response", response),
      ("cookie-reply", NullEdge.cookieReply(to: initiation, crypto: crypto)),
      ("refuse-sealed", NullEdge.refusal(to: initiation, reason: 5, detail: 1, crypto: crypto)),
      ("refuse-clear", NullEdge.refuseClear(to: initiation)),
    ]
    for (name, bytes) in answers {
      add("answer-\(name)", 0x82, bytes)
      add("answer-\(name)-unpatched", 0x02, bytes)
    }
    add("reset", 0xC3, NullEdge.reset(sessionID: Decoding.channelSessionID))
    add("reset-unpatched", 0x03, NullEdge.reset(sessionID: Decoding.channelSessionID))
    // The device's: its INIT, the request in it, the CONFIRM it answers the RESPONSE with.
    add("init", 4, Array(initiation))
    add("request", 5, Array(initiation[269..<437]))
    var handshake = Decoding.attempt.handshake
    if let response, case .established(let established)? = try? handshake.receive(response[...]) {
      add("confirm", 6, established.confirm.bytes)
    }
    // The device's payloads, as its layer seals them (in clear under the null AEAD).
    let now = Decoding.now
    var channel = Decoding.channel
    channel.advance(to: now + .seconds(1))
    add(
      "payload-heartbeat", 7, channel.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    channel.call(at: now + .seconds(1)) { s, now, out in
      try? s.renewToken(NullEdge.token(filler: 0x33), now: now, into: &out)
    }
    add("payload-renew", 7, channel.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    let ping = NullEdge.data(sessionID: Decoding.channelSessionID, counter: 1, payload: challenge)
    channel.receive(ping[...], at: now + .seconds(1))
    add(
      "payload-path-response", 7,
      channel.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    channel.call(at: now + .seconds(1)) { s, now, out in s.leave(now: now, into: &out) }
    add("payload-leave", 7, channel.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    var login = Decoding.login
    login.advance(to: now + .seconds(1))
    add(
      "payload-login-heartbeat", 7,
      login.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    login.call(at: now + .seconds(1)) { s, now, out in
      try? s.joinChannel(Samples.channel, now: now, into: &out)
    }
    add(
      "payload-channel-operation", 7,
      login.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    login.call(at: now + .seconds(2)) { s, now, out in try? s.logout(now: now, into: &out) }
    add("payload-logout", 7, login.sent(0x07).flatMap(NullEdge.payload(ofData:)).map(Array.init))
    return seeds
  }
}
