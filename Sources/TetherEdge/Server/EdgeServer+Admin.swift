// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - Admin requests (tether-edge kick)

extension EdgeServer {
  /// How far an admin request's time may be from the server's wall clock, in seconds.
  static var adminTimeWindow: UInt64 { 60 }

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
      status = apply(request, wallClock: wallClock)
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

  /// Bans the member or user id (if asked for), and ends its session with KICK BANNED.
  private mutating func apply(_ request: AdminRequest, wallClock: UInt64) -> AdminStatus {
    let banned: Bool
    let cookie: UInt64?
    let event: EdgeEvent
    switch request {
    case .kick(let kick):
      let member = MemberKey(channel: kick.channel, uid: kick.uid)
      banned = ban(member, for: kick.banSeconds, in: &bans, wallClock: wallClock)
      cookie = table.channels.members(of: kick.channel)[kick.uid]
      event = .kicked(channel: kick.channel, uid: kick.uid, banSeconds: kick.banSeconds)
    case .kickUser(let kick):
      banned = ban(kick.userID, for: kick.banSeconds, in: &userBans, wallClock: wallClock)
      cookie = table.users[kick.userID]
      event = .userKicked(user: kick.userID, banSeconds: kick.banSeconds)
    }
    guard banned else { return .refused }
    fleetPublish(kickOf: request.fleetTarget, bannedUntil: request.bannedUntil(wallClock))
    guard let cookie else { return .noSuchMember }
    record(event)
    end(cookie, notice: .kick(.banned), cause: nil)
    return .kicked
  }

  /// Bans `key` for `seconds` more (0: no ban). False when `bans` holds `maxSessions` bans
  /// in force already: past that a new one is refused.
  private func ban<Key: Hashable>(
    _ key: Key, for seconds: UInt32, in bans: inout [Key: UInt64], wallClock: UInt64
  ) -> Bool {
    guard seconds > 0 else { return true }
    if bans.count >= config.maxSessions { bans = bans.filter { $0.value > wallClock } }
    guard bans.count < config.maxSessions || bans[key] != nil else { return false }
    bans[key] = wallClock &+ UInt64(seconds)
    return true
  }
}
