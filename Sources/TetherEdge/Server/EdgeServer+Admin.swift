import TetherCore

// MARK: - Admin requests (tether-edge kick)

extension EdgeServer {
  /// How far an admin request's time may be from the server's wall clock, in seconds.
  static let adminTimeWindow: UInt64 = 60

  /// Handles one admin datagram (`tether-edge kick`, with `--user-id` too) as ``receive(_:from:now:wallClock:)``
  /// does for one starting with "TA". Returns the one-byte answer to `address`, and the
  /// KICK and LEFT packets of a kick. A datagram that is not a well-formed admin request
  /// gets no answer.
  public mutating func admin(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, now: Instant, wallClock: UInt64
  ) -> [Outgoing] {
    _ = advanceClock(now)
    handleAdmin(datagram, from: address, wallClock: wallClock)
    return takeOutput()
  }

  mutating func handleAdmin(
    _ datagram: ArraySlice<UInt8>, from address: PeerAddress, wallClock: UInt64
  ) {
    let status: AdminStatus
    do throws(AdminError) {
      let request = try AdminRequest.open(
        datagram, appID: config.appID, certificate: config.appCertificate)
      try take(request, wallClock: wallClock)
      switch request {
      case .kick(let kick): status = apply(kick, wallClock: wallClock)
      case .kickUser(let kick): status = apply(kick, wallClock: wallClock)
      }
    } catch .malformed {
      counters.malformed &+= 1
      return
    } catch {
      counters.adminRefused &+= 1
      status = .refused
    }
    outbox.sendRaw([status.rawValue], to: address)
  }

  /// Checks the time window and the nonce, and remembers the nonce.
  private mutating func take(_ request: AdminRequest, wallClock: UInt64) throws(AdminError) {
    let distance =
      request.unixTime > wallClock ? request.unixTime - wallClock : wallClock - request.unixTime
    guard distance <= Self.adminTimeWindow else { throw .outOfTimeWindow }
    guard takenNonces[request.nonce] == nil else { throw .replayed }
    if takenNonces.count >= Self.maximumNonces {
      takenNonces = takenNonces.filter { $0.value > wallClock }
      // Only requests signed with the certificate get here: a flood of them is the
      // operator's own doing, and is refused rather than remembered without bound.
      guard takenNonces.count < Self.maximumNonces else { throw .replayed }
    }
    takenNonces[request.nonce] = request.unixTime &+ 2 * Self.adminTimeWindow
  }

  /// Bans (if asked) and kicks.
  private mutating func apply(_ request: AdminKick, wallClock: UInt64) -> AdminStatus {
    let member = MemberKey(channel: request.channel, uid: request.uid)
    if request.banSeconds > 0 {
      if bans.count >= config.maxSessions { bans = bans.filter { $0.value > wallClock } }
      guard bans.count < config.maxSessions || bans[member] != nil else { return .refused }
      bans[member] = wallClock &+ UInt64(request.banSeconds)
    }
    guard let cookie = table.holder(of: request.uid, in: request.channel),
      let session = table[cookie]
    else { return .noSuchMember }
    record(.kicked(channel: session.channel, uid: session.uid, banSeconds: request.banSeconds))
    end(cookie, with: .kick(.banned), cause: nil, announce: true)
    return .kicked
  }

  /// Bans the user id (if asked) and ends its login session with KICK BANNED.
  private mutating func apply(_ request: AdminKickUser, wallClock: UInt64) -> AdminStatus {
    let user = request.userID
    if request.banSeconds > 0 {
      if userBans.count >= config.maxSessions {
        userBans = userBans.filter { $0.value > wallClock }
      }
      guard userBans.count < config.maxSessions || userBans[user] != nil else { return .refused }
      userBans[user] = wallClock &+ UInt64(request.banSeconds)
    }
    guard let cookie = logins.cookie(of: user) else { return .noSuchMember }
    record(.userKicked(user: user, banSeconds: request.banSeconds))
    endLogin(cookie, with: .kick(.banned), cause: nil)
    return .kicked
  }
}
