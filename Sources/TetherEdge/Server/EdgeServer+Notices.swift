// SPDX-License-Identifier: Apache-2.0
import TetherCore

// MARK: - Notices that survive one lost datagram

/// A session the server ended with a notice to its client (KICK, TOKEN_EXPIRED): any later
/// datagram of it is answered with the notice again, until `until` (a rejoin that resumes
/// it, at its INIT or CONFIRM, only with a KICK: after TOKEN_EXPIRED its own token decides).
/// So a lost KICK becomes a KICK one heartbeat later, not a RESET and a rejoin, and a rejoin
/// already under way meets it too.
struct EndedSession {
  let notice: Message
  let until: Instant
}

/// A member that left a channel on purpose (LEAVE, kick, token expiry): its LEFT entry
/// rides on the channel's digests until `until`, so one lost datagram does not turn QUIT
/// into DROPPED at the others.
struct Departure {
  let uid: UInt32
  let until: Instant
}

extension EdgeServer {
  /// How many digests after the first LEFT carry it again.
  static var departureRepeats: UInt64 { 3 }

  /// Answers a datagram under a cookie the server ended with its notice again; false when
  /// the cookie was not ended (or long ago). The notice is never larger than the datagram
  /// that asks (a HEARTBEAT, LOGIN_HEARTBEAT, CHANNEL_OPERATION, RENEW_TOKEN; the INIT or
  /// CONFIRM of a resume of the session).
  mutating func repeatNotice(_ cookie: UInt64, to address: PeerAddress) -> Bool {
    guard let session = ended[cookie], session.until > clock else { return false }
    counters.noticesRepeated &+= 1
    outbox.send(session.notice, cookie: cookie, to: address)
    return true
  }

  /// Remembers that `uid` left `channel`, for the next digests.
  mutating func recordDeparture(of uid: UInt32, from channel: ChannelName) {
    guard departureCount < config.maxSessions else { return }
    let until =
      clock + Interval(nanoseconds: config.presenceInterval.nanoseconds &* Self.departureRepeats)
    departures[channel, default: []].append(Departure(uid: uid, until: until))
    departureCount += 1
  }

  /// `uid` is in `channel` again: no LEFT for it any more.
  mutating func cancelDeparture(of uid: UInt32, from channel: ChannelName) {
    guard let list = departures[channel] else { return }
    let kept = list.filter { $0.uid != uid }
    departureCount -= list.count - kept.count
    departures[channel] = kept.isEmpty ? nil : kept
  }

  /// The LEFT entries `channel`'s digests still carry.
  func departureEntries(of channel: ChannelName) -> [PresenceEntry] {
    (departures[channel] ?? []).map { PresenceEntry(uid: $0.uid, kind: .left, silentForMs: 0) }
  }

  /// Forgets ended sessions and departures whose time is over.
  mutating func pruneNotices(now: Instant) {
    for (cookie, session) in ended where session.until <= now && front.holds(cookie) {
      front.retiring.append(cookie)  // a version 2 session's keys go with its notice
    }
    ended = ended.filter { $0.value.until > now }
    var count = 0
    departures = departures.compactMapValues { list in
      let kept = list.filter { $0.until > now }
      count += kept.count
      return kept.isEmpty ? nil : kept
    }
    departureCount = count
  }
}
