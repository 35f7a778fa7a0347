import TetherCore

// MARK: - Presence, silence, token expiry

extension EdgeServer {
  /// Every member of every channel with others in it (or with members who left lately)
  /// gets the channel's whole member list with ages (ALIVE; JOINED for the members that
  /// joined in the last three presence intervals), then the LEFT entries of
  /// those who left on purpose lately. The list is encoded once per channel and only the
  /// cookie differs per recipient; it includes the recipient itself, which the client
  /// skips (its own uid).
  mutating func relayPresence(now: Instant) {
    for (channel, members) in table.channels where members.count > 1 || departures[channel] != nil {
      let entries =
        presenceEntries(of: channel, kind: .alive, now: now, except: nil)
        + departureEntries(of: channel)
      let templates = Outbox.presenceTemplates(entries)
      for (_, cookie) in members {
        guard let member = table[cookie] else { continue }
        for template in templates {
          outbox.send(template: template, cookie: cookie, to: member.address)
        }
      }
    }
  }

  /// Forgets, silently, every session not heard from for forget-after: the other members
  /// have judged it from its age in the digests (DROPPED at 20 s) long before.
  mutating func forgetSilentSessions(now: Instant) {
    let silent = table.sessions.values.filter {
      now.since($0.lastHeard) >= config.forgetAfter
    }
    for session in silent { removeSession(session.cookie, cause: .forgotten, announce: false) }
  }

  /// Sends TOKEN_EXPIRED to every session whose token expired by `wallClock` and removes
  /// it; the others get LEFT. Bans that ended are dropped on the way.
  mutating func expireTokens(wallClock: UInt64) {
    let expired = table.sessions.values.filter {
      $0.tokenExpiry != 0 && $0.tokenExpiry <= wallClock
    }
    for session in expired {
      end(session.cookie, with: .tokenExpired, cause: .tokenExpired, announce: true)
    }
    bans = bans.filter { $0.value > wallClock }
  }
}
