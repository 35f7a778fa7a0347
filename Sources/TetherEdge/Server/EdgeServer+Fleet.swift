// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - The fleet: this edge's sessions as records on the bus, the others' as members here

extension EdgeServer {
  /// Whether this edge is one of a fleet (``EdgeConfig/fleetIncarnation`` was given).
  public var isInFleet: Bool { fleet != nil }

  /// What the fleet did so far (nil when this edge is alone).
  public var fleetCounters: FleetCounters? { fleet?.counters }

  /// Feeds what the bus said (``FleetBus/takeInputs()``), in order; returns the datagrams
  /// this edge's devices get for it (JOINED, LEFT and member events of remote members; the
  /// KICK of a session another edge's newer session took over, or an admin action taken on
  /// another edge). Nothing for an edge that is not in a fleet.
  public mutating func fleet(_ inputs: [FleetInput], now: Instant, wallClock: UInt64)
    -> [Outgoing]
  {
    let now = advanceClock(now)
    guard fleet != nil else { return [] }
    for input in inputs {
      if case .message(let subject, let payload) = input {
        hear(subject: subject, payload, now: now, wallClock: wallClock)
        continue
      }
      if case .up = input, nextBeaconAt == nil { nextBeaconAt = now + config.presenceInterval }
      for change in fleet?.apply(input, now: now) ?? [] {
        act(on: change, now: now, wallClock: wallClock)
      }
    }
    return takeOutput()
  }

  /// What the bus is to do (``FleetBus/submit(_:)``): the writes and messages due since the
  /// last call. Empty for an edge that is not in a fleet.
  public mutating func takeFleetCommands() -> [FleetCommand] {
    fleet?.takeCommands() ?? []
  }

  // MARK: - This edge's sessions, told to the fleet

  /// A new session here: its identity (and, in a channel, its membership) is claimed.
  mutating func fleetClaim(_ session: SessionRecord, wallClock: UInt64) {
    guard fleet != nil else { return }
    let at = wallClock &* 1000
    switch session.profile {
    case .channel(let member):
      fleet?.claim(.member(member.channel, uid: member.uid), joinedAtMs: at)
    case .login(let login): fleet?.claim(.user(login.userID), joinedAtMs: at)
    }
  }

  /// A session here ended: its records become left (a member that quit, or was kicked: the
  /// others are told) or are deleted (forgotten or taken over: silently).
  mutating func fleetRelease(_ removed: SessionRecord, announce: Bool) {
    guard fleet != nil else { return }
    switch removed.profile {
    case .channel(let member):
      fleet?.release(.member(member.channel, uid: member.uid), quit: announce, now: clock)
    case .login(let login):
      fleet?.release(.user(login.userID), quit: false, now: clock)
      for channel in login.channels {
        fleet?.release(.loginMember(channel, login.userID), quit: false, now: clock)
      }
    }
  }

  /// A login session here joined (or left) a login channel.
  mutating func fleetLoginChannel(_ channel: ChannelName, user: UserID, joined: Bool) {
    guard fleet != nil else { return }
    if joined {
      fleet?.claim(.loginMember(channel, user), joinedAtMs: 0)
    } else {
      fleet?.release(.loginMember(channel, user), quit: false, now: clock)
    }
  }

  /// An admin action taken here goes to every edge (the member may be joined on another).
  mutating func fleetPublish(kickOf target: FleetKey, bannedUntil: UInt64) {
    guard let me = fleet?.me,
      let admin = FleetAdmin(origin: me, target: target, bannedUntil: bannedUntil)
    else { return }
    fleet?.publish(FleetAdmin.subject, admin.bytes)
  }

  // MARK: - The others, told to this edge's devices

  private mutating func act(on change: FleetState.Change, now: Instant, wallClock: UInt64) {
    switch change {
    case .joined(.member(let channel, let uid)):
      guard table.channels.members(of: channel)[uid] == nil else { return }
      cancelDeparture(of: uid, from: channel)
      broadcast(PresenceEntry(uid: uid, kind: .joined, silentForMs: 0), in: channel)
    case .left(.member(let channel, let uid)):
      guard table.channels.members(of: channel)[uid] == nil else { return }
      broadcast(PresenceEntry(uid: uid, kind: .left, silentForMs: 0), in: channel)
      recordDeparture(of: uid, from: channel)
    case .gone(.member):
      break  // its members judged it from its age (DROPPED), or it changed hands
    case .joined(.loginMember(let channel, let user)):
      guard table.users[user] == nil else { return }
      announce(.joined, of: user, in: channel, except: nil)
    case .left(.loginMember(let channel, let user)), .gone(.loginMember(let channel, let user)):
      guard table.users[user] == nil else { return }
      announce(.left, of: user, in: channel, except: nil)
    case .lost(.member(let channel, let uid)):
      guard let cookie = table.channels.members(of: channel)[uid] else { return }
      // The uid changes hands: the members keep seeing it present, with no LEFT.
      end(cookie, notice: .kick(.sameUID), cause: .replaced, announce: false)
    case .lost(.user(let user)):
      guard let cookie = table.users[user] else { return }
      end(cookie, notice: .kick(.remoteLogin), cause: .remoteLogin)
    case .joined(.user), .left(.user), .gone(.user), .lost(.loginMember):
      break  // a user id is no member; a login channel follows its session's identity
    }
  }

  /// A message on the fleet's subjects: a beacon, or an admin action. Anything else, or
  /// what does not parse, is counted and dropped.
  private mutating func hear(
    subject: String, _ payload: [UInt8], now: Instant, wallClock: UInt64
  ) {
    if subject == FleetBeacon.subject, let beacon = FleetBeacon(payload) {
      fleet?.heard(beacon, now: now)
    } else if subject == FleetAdmin.subject, let admin = FleetAdmin(payload) {
      guard admin.origin != fleet?.me else { return }
      applyRemote(admin, now: now, wallClock: wallClock)
    } else {
      counters.malformed &+= 1
    }
  }

  /// Another edge's kick or ban: the ban is kept here too, and a session here ends.
  private mutating func applyRemote(_ admin: FleetAdmin, now: Instant, wallClock: UInt64) {
    let cookie: UInt64?
    switch admin.target {
    case .member(let channel, let uid):
      if admin.bannedUntil > wallClock {
        bans[MemberKey(channel: channel, uid: uid)] = admin.bannedUntil
      }
      cookie = table.channels.members(of: channel)[uid]
      if cookie != nil {
        let seconds = admin.bannedUntil > wallClock ? admin.bannedUntil - wallClock : 0
        record(.kicked(channel: channel, uid: uid, banSeconds: UInt32(clamping: seconds)))
      }
    case .user(let user):
      if admin.bannedUntil > wallClock { userBans[user] = admin.bannedUntil }
      cookie = table.users[user]
      if cookie != nil {
        let seconds = admin.bannedUntil > wallClock ? admin.bannedUntil - wallClock : 0
        record(.userKicked(user: user, banSeconds: UInt32(clamping: seconds)))
      }
    case .loginMember:
      cookie = nil
    }
    if let cookie { end(cookie, notice: .kick(.banned), cause: nil) }
  }

  // MARK: - Time

  /// Every presence interval: this edge's beacon (its channel members silent longer than a
  /// heartbeat and a half, with their silence), and the fleet's own upkeep (writes tried
  /// again, left records deleted, gone edges' records reaped).
  mutating func fleetTick(now: Instant) {
    guard let due = nextBeaconAt, due <= now, let me = fleet?.me else { return }
    nextBeaconAt = Self.next(after: due, every: config.presenceInterval, now: now)
    let quiet = Interval(nanoseconds: config.presenceInterval.nanoseconds / 2 * 3)
    var silences: [String: UInt64] = [:]
    for session in table.records.values {
      guard let member = session.member else { continue }
      let silent = now.since(session.lastHeard)
      guard silent > quiet else { continue }
      silences[FleetKey.member(member.channel, uid: member.uid).key] =
        silent.nanoseconds / 1_000_000
    }
    fleet?.publish(FleetBeacon.subject, FleetBeacon(owner: me, silences: silences).bytes)
    fleet?.tick(now: now)
  }
}

extension AdminRequest {
  /// The record this kick is about, in the fleet's bucket.
  var fleetTarget: FleetKey {
    switch self {
    case .kick(let kick): .member(kick.channel, uid: kick.uid)
    case .kickUser(let kick): .user(kick.userID)
    }
  }

  /// Until when it bans (unix seconds), taken at `wallClock`; 0 for a plain kick.
  func bannedUntil(_ wallClock: UInt64) -> UInt64 {
    let seconds: UInt32
    switch self {
    case .kick(let kick): seconds = kick.banSeconds
    case .kickUser(let kick): seconds = kick.banSeconds
    }
    return seconds == 0 ? 0 : wallClock &+ UInt64(seconds)
  }
}
