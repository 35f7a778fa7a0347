// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - Protocol version 2 (docs/PROTOCOL.md §12)
//
// Every client datagram (first byte 0x01 … 0x08) comes here. The handshake ends in the one
// admission of both profiles, the session id naming the session; a DATA datagram, once
// opened, is handled as the message its payload stands for; and what the server sends a
// session is sealed under its keys when the input's output is written (``writeOutput(_:)``).

extension EdgeServer {
  /// The smallest DATA datagram a device sends (§12.13): a header, 9 payload bytes, a tag.
  static var smallestDeviceData: Int { 42 }

  mutating func receiveSecure(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    // Tickets and cookies are bound to an IP address and port (§12.6).
    guard let source = IPEndpoint(binding: address) else {
      counters.malformed &+= 1
      return
    }
    // INIT rule 1 and CONFIRM rule 1: the exact size (and version) of the kind.
    if let initiation = try? InitMessage(decoding: datagram) {
      receiveInit(initiation, from: address, source, now: now, wallClock: wallClock)
    } else if let confirm = try? ConfirmMessage(decoding: datagram) {
      receiveConfirm(confirm, from: address, source, now: now, wallClock: wallClock)
    } else if datagram.first == SealedData<Crypto.Cipher>.kind {
      receiveData(datagram, from: address, now: now, wallClock: wallClock)
    } else if datagram.first == InitMessage.kind || datagram.first == ConfirmMessage.kind {
      counters.malformed &+= 1
    } else {
      counters.unexpected &+= 1  // a kind the edge sends
    }
  }

  // MARK: INIT (§12.6: no state kept, one answer no larger than the INIT)

  private mutating func receiveInit(
    _ initiation: InitMessage, from address: PeerAddress, _ source: IPEndpoint, now: Instant,
    wallClock: UInt64
  ) {
    var budget = AmplificationBudget(received: initiation.bytes.count)
    // 2. Under load: no public-key work without a valid mac2.
    let mac2Holds = front.cookies.verifies(
      mac2: initiation.mac2, covering: initiation.bytes[0..<CookieJar<Crypto>.coveredBytes],
      from: source, now: now)
    let admission = front.rate.admit(mac2Verified: mac2Holds, now: now)
    if admission == .proven, !joinLimiter.take(from: address, now: now) {
      counters.joinsLimited &+= 1
      return
    }
    // 3. The token.
    let token: OpenedToken
    do throws(TokenRefusal) {
      token = try front.opener.open(initiation.token)
    } catch {
      counters.unopened &+= 1
      guard admission != .underLoad,
        let refusal = try? RefuseClearMessage(deviceNonce: initiation.deviceNonce)
      else { return }
      counters.refusedHandshakes &+= 1
      return answer(refusal.bytes, to: address, within: &budget)
    }
    // 4. The request (symmetric work only: the transcript up to k_req).
    var secret = token.deviceSecret
    defer { front.crypto.wipe(&secret) }
    guard
      var handshake = try? EdgeHandshake(
        opening: initiation, deviceSecret: secret, crypto: front.crypto)
    else {
      counters.unopened &+= 1
      return
    }
    defer { handshake.wipe() }
    if admission == .underLoad {
      let cookie = front.cookies.cookie(for: source, now: now)
      guard let reply = try? handshake.cookieReply(cookie: cookie) else { return }
      counters.cookieReplies &+= 1
      return answer(reply.bytes, to: address, within: &budget)
    }
    // 5. The checks, each refused sealed.
    let resume: UInt64?
    switch check(handshake, token: token, wallClock: wallClock) {
    case .respond(let named):
      resume = named
    case .refuse(let refused):
      let (reason, detail) = refused.refusal.secureAnswer(refused.kind)
      guard let answer = try? handshake.refusal(reason: reason, detail: detail) else { return }
      counters.refusedHandshakes &+= 1
      return self.answer(answer.bytes, to: address, within: &budget)
    case .kicked(let id):
      return repeatKick(of: id, to: address, within: &budget)
    }
    // 6. e_e, the DH, the ticket, the RESPONSE.
    guard
      let response = respond(
        handshake, token: token, resume: resume, source: source,
        charged: admission == .proven, now: now)
    else { return }
    counters.handshakesAnswered &+= 1
    answer(response, to: address, within: &budget)
  }

  /// A refusal at an INIT: what and for which profile.
  struct InitRefusal: Error {
    let refusal: Refusal
    let kind: SessionKind
  }

  /// What rule 5 decides for an INIT whose request opened.
  enum InitVerdict {
    /// A RESPONSE, whose ticket names the session to resume, if any.
    case respond(resume: UInt64?)
    /// REFUSE_SEALED.
    case refuse(InitRefusal)
    /// It resumes session `id`, which the edge ended with a KICK it still repeats: that KICK
    /// again, and no handshake.
    case kicked(UInt64)
  }

  /// Rule 5 of §12.6, in order: the versions, the app id, the name, a resume of a session
  /// ended with a KICK, the token's grant and expiry, a ban, a resume's proof (a proof that
  /// fails only clears the resume), the caps.
  private func check(
    _ handshake: EdgeHandshake<Crypto>, token: OpenedToken, wallClock: UInt64
  ) -> InitVerdict {
    let request = handshake.request
    let kind: SessionKind = request.kind == HandshakeRequest.loginKind ? .login : .channel
    func refused(_ refusal: Refusal) -> InitVerdict {
      .refuse(InitRefusal(refusal: refusal, kind: kind))
    }
    guard request.versions.contains(InitMessage.version) else { return refused(.noCommonVersion) }
    guard (try? AppID(validating: request.appID)) == config.appID else {
      return refused(.invalidAppID)
    }
    let ask: SessionRequest.Ask
    switch kind {
    case .channel:
      guard let channel = try? ChannelName(validating: request.name), !Self.isReserved(channel)
      else { return refused(.invalidChannelName) }
      ask = .join(channel, uid: request.uid)
    case .login:
      guard let user = try? UserID(validating: request.name) else {
        return refused(.invalidToken)
      }
      ask = .login(user, isRelogin: request.flags & HandshakeRequest.rejoinFlag != 0)
    }
    // As version 1 answered a JOIN or LOGIN under a kicked cookie: the device whose KICK
    // was lost while it rejoined gets it now, rather than a new session that takes its uid
    // or user id back from the one that took it over (or a kicked device back in). Before
    // the token: the KICK says why, whatever the token says now.
    if let kicked = kickedResume(handshake) { return .kicked(kicked) }
    let wanted = ask.grant
    guard token.appID == config.appID else { return refused(.invalidToken) }
    do throws(TokenError) {
      _ = try verify(.opened(token.grant, expiry: token.expiry), for: wanted, wallClock: wallClock)
    } catch {
      return refused(Refusal(error))
    }
    guard !isBanned(wanted, wallClock) else { return refused(.banned) }
    let resume = resumable(handshake, grant: token.grant, kind: kind)
    if resume == nil, holder(of: ask) == nil, let cap = capRefusal(ask) { return refused(cap) }
    return .respond(resume: resume)
  }

  /// The session the request asks to resume, if the edge ended it with a KICK that it still
  /// repeats (its keys are kept for that) and the proof holds under its `k_resume`: only
  /// that session's device can make the proof, so nobody else draws the KICK. After
  /// TOKEN_EXPIRED the INIT's own token decides instead (§5.6): an old one is refused
  /// TOKEN_EXPIRED anyway, and a renewed one makes a new session.
  private func kickedResume(_ handshake: EdgeHandshake<Crypto>) -> UInt64? {
    let id = handshake.request.resumeSessionID
    guard id != 0, table[id] == nil, let notice = ended[id], notice.until > clock,
      case .kick = notice.notice, let keys = front[id],
      handshake.resumeProofHolds(resumeKey: keys.resumeKey)
    else { return nil }
    return id
  }

  /// The KICK that ended session `id` again, sealed afresh under its keys, to the INIT's
  /// address (a device rejoins from wherever it is now): at most 35 bytes for the INIT's
  /// 469, and only symmetric work (the proof, the seal) for the edge.
  private mutating func repeatKick(
    of id: UInt64, to address: PeerAddress, within budget: inout AmplificationBudget
  ) {
    guard let notice = ended[id]?.notice, let keys = front[id] else { return }
    let size = EdgePayload.payloads(of: notice, resetValue: keys.resetValue).reduce(0) {
      $0 + SecureFront<Crypto>.sealedSize(of: $1)
    }
    guard budget.spend(size) else { return }
    _ = repeatNotice(id, to: address)
  }

  /// The session the request asks to resume, if the server holds it as a version 2 session
  /// of the same profile, the token grants it, and the proof holds under its `k_resume`.
  private func resumable(
    _ handshake: EdgeHandshake<Crypto>, grant: TokenGrant, kind: SessionKind
  ) -> UInt64? {
    let id = handshake.request.resumeSessionID
    guard id != 0, let held = table[id], held.kind == kind, grant.admits(held.grant),
      let keys = front[id], handshake.resumeProofHolds(resumeKey: keys.resumeKey)
    else { return nil }
    return id
  }

  /// Rule 6: a session id, the edge's nonce and ephemeral key (drawn in that order), `S`, the
  /// ticket sealed with it, and the RESPONSE's bytes; nil if the device's key is refused.
  private mutating func respond(
    _ handshake: EdgeHandshake<Crypto>, token: OpenedToken, resume: UInt64?,
    source: IPEndpoint, charged: Bool, now: Instant
  ) -> [UInt8]? {
    let crypto = front.crypto
    guard let id = front.issuer.issue(now: now) else {
      counters.randomShortfalls &+= 1
      return nil
    }
    let edgeNonce = crypto.randomBytes(count: 16)
    var ephemeral = crypto.randomBytes(count: 32)
    defer { crypto.wipe(&ephemeral) }
    guard edgeNonce.count == 16, ephemeral.count == 32 else {
      counters.randomShortfalls &+= 1
      return nil
    }
    let lifetimeMs = front.ticketLifetime.nanoseconds / 1_000_000
    guard
      var pending = try? handshake.respond(
        ephemeralSecret: ephemeral, edgeNonce: edgeNonce, sessionID: id.value,
        ticketLifetimeMs: UInt32(clamping: lifetimeMs))
    else {
      counters.unopened &+= 1  // a low-order e_d
      return nil
    }
    var ticket = Ticket(
      expiresAtMs: Self.milliseconds(now) &+ lifetimeMs, address: source,
      sessionSecret: pending.sessionSecret, tokenHeader: token.header, grant: token.grant,
      uidAsked: handshake.request.uid, flags: handshake.request.flags,
      resume: resume.map(SessionID.init), joinBudgetCharged: charged)
    let sealed = front.sealer.seal(ticket, id: id)
    crypto.wipe(&ticket.sessionSecret)
    do throws(HandshakeError) {
      return try pending.finish(ticket: sealed[...]).bytes
    } catch {
      pending.wipe()
      return nil
    }
  }

  /// Sends `bytes` to an address not validated, if they fit its budget (they always do: the
  /// sizes of §12.13 make every answer smaller than the INIT).
  private mutating func answer(
    _ bytes: [UInt8], to address: PeerAddress, within budget: inout AmplificationBudget
  ) {
    guard budget.spend(bytes.count) else { return }
    outbox.sendRaw(bytes, to: address)
  }

  // MARK: CONFIRM (§12.6: the address validated, then admission)

  private mutating func receiveConfirm(
    _ confirm: ConfirmMessage, from address: PeerAddress, _ source: IPEndpoint, now: Instant,
    wallClock: UInt64
  ) {
    // 1 (its epoch) and 2: the ticket, unexpired, from its own address.
    let id = confirm.sessionID
    var ticket: Ticket
    do throws(TicketRefusal) {
      ticket = try front.sealer.open(confirm.ticket, id: SessionID(id), from: source, now: now)
    } catch .wrongAddress {
      counters.wrongAddress &+= 1
      return
    } catch .unopened, .malformed {
      counters.unopened &+= 1
      return
    } catch {
      counters.staleTickets &+= 1
      return
    }
    defer { front.crypto.wipe(&ticket.sessionSecret) }
    // 3. The tag.
    guard
      EdgeHandshake.confirmHolds(
        confirm, sessionSecret: ticket.sessionSecret, crypto: front.crypto)
    else {
      counters.unopened &+= 1
      return
    }
    // 4. Consumed: the ACCEPT again, sealed afresh, if the session is held there.
    if front.consumed.contains(SessionID(id), now: now) {
      return repeatAccept(id, to: address, now: now, wallClock: wallClock)
    }
    let request = Self.request(in: ticket, appID: config.appID)
    // 5. The join budget, charged only now that the address is validated.
    let resumed = ticket.resume.flatMap { table[$0.value] }
    let settled = ticket.joinBudgetCharged || resumed?.address == address
    guard settled || joinLimiter.take(from: address, now: now) else {
      // Dropped unconsumed, a channel's CONFIRM and a login's alike: the device repeats it
      // while its ticket lives, then makes a new INIT with its backoff, and is taken once
      // the bucket refills. (A login one was answered LOGIN_REFUSE REJECTED: a login
      // failure for the devices behind a NAT that all came back after an edge restart.)
      counters.joinsLimited &+= 1
      return
    }
    guard
      front.consumed.consume(SessionID(id), expiresAtMs: ticket.expiresAtMs, now: now)
        == .consumed
    else { return }  // full: dropped, nothing forgotten early
    do throws(HandshakeError) {
      try front.register(id: id, sessionSecret: ticket.sessionSecret, address: address)
    } catch {
      return
    }
    front.retiring.append(id)  // kept only if admission makes the session
    // The session its INIT resumed was ended since with a KICK (a takeover, a kick): the
    // KICK again, under that session's keys, as at an INIT (rule 5), and no session (these
    // keys go once the output is written).
    if let old = ticket.resume?.value, table[old] == nil, case .kick? = ended[old]?.notice,
      repeatNotice(old, to: address)
    {
      return
    }
    // 6 and 7. Admission; a resume first takes the new id.
    if let old = ticket.resume?.value, front.holds(old), table.rekey(old, to: id) {
      front.forget(old)
    }
    admit(request, cookie: id, from: address, now: now, wallClock: wallClock)
  }

  /// What a ticket asks for, with the credential its INIT's token proved (its grant, and
  /// the expiry of its public header).
  private static func request(in ticket: Ticket, appID: AppID) -> SessionRequest {
    var expiry: UInt64 = 0
    for byte in ticket.tokenHeader.dropFirst(3) { expiry = expiry << 8 | UInt64(byte) }
    let ask: SessionRequest.Ask
    switch ticket.grant {
    case .channel(let channel, _): ask = .join(channel, uid: ticket.uidAsked)
    case .user(let user):
      ask = .login(user, isRelogin: ticket.flags & HandshakeRequest.rejoinFlag != 0)
    }
    return SessionRequest(
      appID: appID, ask: ask, credential: .opened(ticket.grant, expiry: expiry))
  }

  /// A consumed ticket's CONFIRM again: the session it made gets its ACCEPT again if it is
  /// still held at that address (its first one was lost), saying `resumed` as the first
  /// did; otherwise nothing, so a replay after a leave makes nothing.
  private mutating func repeatAccept(
    _ id: UInt64, to address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    guard let session = table[id], session.address == address, let keys = front[id] else {
      counters.confirmsReplayed &+= 1
      return
    }
    sendAccept(session, resumed: keys.resumed, now: now, wallClock: wallClock)
  }

  // MARK: DATA (§12.7)

  private mutating func receiveData(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) {
    guard datagram.count >= Self.smallestDeviceData, datagram.count <= Packet.maximumSize else {
      counters.malformed &+= 1
      counters.dataDropped &+= 1
      return
    }
    let base = datagram.startIndex
    var id: UInt64 = 0
    for byte in datagram[(base + 1)..<(base + 9)] { id = id << 8 | UInt64(byte) }
    guard let keys = front[id] else {
      counters.unknownSession &+= 1
      counters.dataDropped &+= 1
      return sendReset(id, to: address, now: now)
    }
    var payload: [UInt8] = []
    let newest: Bool
    do throws(SealedData<Crypto.Cipher>.Refusal) {
      newest = try front.open(datagram, id: id, into: &payload)
    } catch .replayed {
      counters.replayed &+= 1
      return
    } catch .unopened {
      counters.unopened &+= 1
      return
    } catch {
      counters.malformed &+= 1
      counters.dataDropped &+= 1
      return
    }
    let decoded = DevicePayload(decoding: payload[...])
    // Only from here on is the datagram the device's (or a copy of it moved on the path).
    guard
      let from = follow(
        id, datagram.count, from: address, session: table[id]?.address ?? keys.address,
        newest: newest, decoded: decoded)
    else { return }
    switch decoded {
    case .message(let message):
      handle(Packet(cookie: id, message: message), from: from, now: now, wallClock: wallClock)
    case .renewToken(let wire):
      guard let record = hear(id, nil, from: from, now: now) else {
        return answerUnheard(id, to: from)
      }
      renew(credential(of: wire), for: record, wallClock: wallClock)
    case .pathResponse:
      counters.dataDropped &+= 1  // one that validated nothing (follow took the one that did)
    case nil:
      counters.malformed &+= 1
      counters.dataDropped &+= 1
    }
  }

  /// Roaming (§12.11), for a DATA datagram of session `id` that opened from `address`, the
  /// session being at `session`: the address its content is taken from, or nil when it was
  /// all path business (a PATH_RESPONSE that moved the session) or the datagram must go no
  /// further (an ended session's, from elsewhere than its address).
  ///
  /// From the session's own address a newest datagram drops any candidate (the device did
  /// not move). From another: a PATH_RESPONSE echoing the candidate's challenge from the
  /// candidate itself moves the session there; anything else is taken as if it came from the
  /// session's address (so every answer still goes there, the fallback, and a heartbeat
  /// counts as heard), and a newest one makes its source the candidate, whose
  /// PATH_CHALLENGE goes there at once within its budget. Peers see nothing of it.
  private mutating func follow(
    _ id: UInt64, _ size: Int, from address: PeerAddress, session: PeerAddress, newest: Bool,
    decoded: DevicePayload?
  ) -> PeerAddress? {
    if address == session {
      front.heardAtSession(id, newest: newest)
      return address
    }
    // An ended session's notice repeats only where it was validated; it does not roam.
    guard table[id] != nil else {
      counters.wrongAddress &+= 1
      counters.dataDropped &+= 1
      return nil
    }
    if case .pathResponse(let echo) = decoded,
      let moved = front.validate(echo[...], of: id, from: address)
    {
      table.move(id, to: moved)
      counters.migrations &+= 1
      return nil
    }
    if let challenge = front.heard(size, of: id, from: address, newest: newest) {
      counters.pathChallenges &+= 1
      outbox.sendRaw(challenge, to: address)
    }
    return session
  }

  /// The credential of a renewal's `W`: nil unless it opens under the certificate and is
  /// for this edge's app (the renewal is then refused INVALID_TOKEN).
  private func credential(of wire: [UInt8]) -> Credential? {
    guard let token = try? front.opener.open(wire[...]), token.appID == config.appID else {
      return nil
    }
    return .opened(token.grant, expiry: token.expiry)
  }

  /// RESET (§12.9) for a DATA datagram naming session `id`, which the edge does not hold,
  /// only when the id was issued long enough ago (or in another start) that no ticket of it
  /// can still become a session: 25 bytes, answering at least 42.
  private mutating func sendReset(_ id: UInt64, to address: PeerAddress, now: Instant) {
    guard front.issuer.mayReset(SessionID(id), now: now),
      let reset = try? ResetMessage(sessionID: id, resetValue: front.resetValue(of: id)[...])
    else { return }
    counters.resets &+= 1
    outbox.sendRaw(reset.bytes, to: address)
  }

  // MARK: Output

  /// The input's output for the wire: each message sealed under its session's keys with its
  /// next counter (never a stored datagram sent again), SESSION_UNKNOWN as its RESET, raw
  /// bytes (handshake and admin answers) as they are; a message for a session the edge
  /// holds no keys of is not sent. Then the keys no session needs any more are forgotten.
  mutating func writeOutput(_ items: [Outbox.Item]) -> [Outgoing] {
    var out: [Outgoing] = []
    out.reserveCapacity(items.count)
    for item in items {
      guard let (cookie, address) = item.session else {
        if case .raw(let datagram) = item { out.append(datagram) }
        continue
      }
      guard let keys = front[cookie] else { continue }
      let payloads: [[UInt8]]
      switch item {
      case .message(.sessionUnknown, _, _):
        if let reset = try? ResetMessage(sessionID: cookie, resetValue: keys.resetValue[...]) {
          counters.resets &+= 1
          out.append(Outgoing(address: address, bytes: reset.bytes))
        }
        continue
      case .message(let message, _, _):
        payloads = EdgePayload.payloads(of: message, resetValue: keys.resetValue)
      case .template(let template, _, _):
        payloads = EdgePayload.payloads(of: EdgePayload.of(template: template))
      case .refusal(let refusal, let kind, _, _):
        payloads = [EdgePayload.of(refusal, kind)]
      case .raw(let datagram):
        out.append(datagram)
        continue
      }
      for payload in payloads {
        if let sealed = front.seal(payload, id: cookie) {
          out.append(Outgoing(address: address, bytes: sealed))
        }
      }
    }
    retireKeys()
    return out
  }

  /// Forgets the keys of the sessions that were ended (or never made) and whose notice is
  /// not repeated: neither held nor in ``ended``.
  private mutating func retireKeys() {
    while let id = front.retiring.popLast() {
      if table[id] == nil, ended[id] == nil { front.forget(id) }
    }
  }
}

extension Outbox.Item {
  /// The session the item is for and where it goes; nil for raw bytes.
  var session: (cookie: UInt64, address: PeerAddress)? {
    switch self {
    case .message(_, let cookie, let address), .template(_, let cookie, let address),
      .refusal(_, _, let cookie, let address):
      (cookie, address)
    case .raw: nil
    }
  }
}
