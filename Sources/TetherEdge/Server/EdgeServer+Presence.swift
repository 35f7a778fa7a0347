// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - The channel profile's own: presence

extension EdgeServer {
  /// Every member of every channel with others in it, here or on other edges of the fleet
  /// (or with members who left lately)
  /// gets the channel's whole member list with ages (ALIVE; JOINED for the members that
  /// joined in the last three presence intervals), then the LEFT entries of
  /// those who left on purpose lately. The list is encoded once per channel and only the
  /// cookie differs per recipient; it includes the recipient itself, which the client
  /// skips (its own uid).
  mutating func relayPresence(now: Instant) {
    for (channel, members) in table.channels.channels
    where members.count > 1 || departures[channel] != nil
      || fleet?.remoteMembers[channel] != nil
    {
      let entries =
        presenceEntries(of: channel, kind: .alive, now: now, except: nil)
        + departureEntries(of: channel)
      send(Outbox.presenceTemplates(entries), to: members.values)
    }
  }

  /// Sends `entry` to every member of `channel` but `excluded`.
  mutating func broadcast(
    _ entry: PresenceEntry, in channel: ChannelName, except excluded: UInt64? = nil
  ) {
    let members = table.channels.members(of: channel).values.filter { $0 != excluded }
    send(Outbox.presenceTemplates([entry]), to: members)
  }

  /// The other members of `channel`, as `kind` entries with their ages, to `session`.
  mutating func sendSnapshot(
    of channel: ChannelName, kind: PresenceEntry.Kind, to session: SessionRecord, now: Instant
  ) {
    let entries = presenceEntries(of: channel, kind: kind, now: now, except: session.cookie)
    send(Outbox.presenceTemplates(entries), to: [session.cookie])
  }

  /// Each of `templates` under each of `cookies`, at its session's address.
  private mutating func send<Cookies: Sequence<UInt64>>(_ templates: [[UInt8]], to cookies: Cookies)
  {
    for cookie in cookies {
      guard let session = table[cookie] else { continue }
      for template in templates {
        outbox.send(template: template, cookie: cookie, to: session.address)
      }
    }
  }

  /// `channel`'s members but `excluded`, sorted by uid, each with its silence.
  func presenceEntries(
    of channel: ChannelName, kind: PresenceEntry.Kind, now: Instant, except excluded: UInt64?
  ) -> [PresenceEntry] {
    var entries: [PresenceEntry] = []
    let announced = Interval(
      nanoseconds: config.presenceInterval.nanoseconds &* Self.departureRepeats)
    for (uid, cookie) in table.channels.members(of: channel) where cookie != excluded {
      guard let session = table[cookie], let member = session.member else { continue }
      let silent = now.since(session.lastHeard).clampedMilliseconds
      // A member that joined lately is JOINED, not ALIVE, in as many digests as a LEFT
      // is repeated: a peer that lost the JOINED broadcast, and that refuses ALIVE for a
      // uid it saw QUIT lately, still sees it back at the next digest.
      let fresh = kind == .alive && now.since(member.joinedAt) < announced
      entries.append(PresenceEntry(uid: uid, kind: fresh ? .joined : kind, silentForMs: silent))
    }
    // Members joined on other edges of the fleet, aged by their edges' beacons.
    let local = table.channels.members(of: channel)
    for uid in fleet?.remoteMembers[channel] ?? [] where local[uid] == nil {
      let key = FleetKey.member(channel, uid: uid)
      guard let silence = fleet?.silence(of: key, now: now), let held = fleet?.mirror[key] else {
        continue
      }
      let fresh = kind == .alive && now.since(held.since) < announced
      entries.append(
        PresenceEntry(
          uid: uid, kind: fresh ? .joined : kind, silentForMs: silence.clampedMilliseconds))
    }
    entries.sort { $0.uid < $1.uid }
    return entries
  }
}
