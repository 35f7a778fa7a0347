// SPDX-License-Identifier: Apache-2.0
/// What `tether-edge serve --print-counters` prints on stdout when it stops: the counters
/// (the line older than version 2, as it always was, then version 2's) and the table sizes,
/// one line each, `NAME VALUE` pairs after a first word that names the line.
public struct EdgeSummary: Equatable, Sendable {
  public var counters: EdgeCounters
  public var tables: EdgeTableCounts
  /// Datagrams the system did not take (``EdgeLoop/sendFailures``).
  public var sendFailures: UInt64
  /// Datagrams the kernel dropped before the edge read them (``EdgeLoop/receiveDrops``).
  public var receiveDrops: UInt64

  public init(
    counters: EdgeCounters, tables: EdgeTableCounts, sendFailures: UInt64,
    receiveDrops: UInt64 = 0
  ) {
    self.counters = counters
    self.tables = tables
    self.sendFailures = sendFailures
    self.receiveDrops = receiveDrops
  }

  /// The lines, in order: `counters …`, `v2 …`, `tables …`.
  public var lines: [String] { [counterLine, versionTwoLine, "tables \(tables)"] }

  /// What the edge set aside (its format is older than version 2: kept).
  public var counterLine: String {
    let c = counters
    return "counters malformed \(c.malformed) unexpected \(c.unexpected)"
      + " unknown-session \(c.unknownSession) wrong-address \(c.wrongAddress)"
      + " refused-joins \(c.refusedJoins) joins-limited \(c.joinsLimited)"
      + " admin-refused \(c.adminRefused) send-failures \(sendFailures)"
      + " refused-logins \(c.refusedLogins) operations-unordered \(c.channelOperationsUnordered)"
      + " operations-over-limit \(c.channelOperationsOverLimit)"
      + " events-resent \(c.memberEventsResent) event-overflows \(c.eventQueueOverflows)"
      + " receive-drops \(receiveDrops)"
  }

  /// Version 2's counts (docs/PROTOCOL.md §12): handshakes answered with a RESPONSE, cookie
  /// replies, refused handshakes, stale tickets, replayed CONFIRMs; datagrams that did not
  /// open (DATA, tokens, requests, tickets, tags), DATA replayed and dropped; RESETs sent;
  /// path challenges and migrations (§12.11); INITs unanswered for want of random bytes;
  /// and the version 1 datagrams dropped (§12.14: version 1 is removed).
  public var versionTwoLine: String {
    let c = counters
    return "v2 handshakes \(c.handshakesAnswered) cookie-replies \(c.cookieReplies)"
      + " refused-handshakes \(c.refusedHandshakes) stale-tickets \(c.staleTickets)"
      + " confirms-replayed \(c.confirmsReplayed) unopened \(c.unopened)"
      + " replayed \(c.replayed) data-dropped \(c.dataDropped) resets \(c.resets)"
      + " path-challenges \(c.pathChallenges) migrations \(c.migrations)"
      + " random-shortfalls \(c.randomShortfalls) v1-dropped \(c.versionOneDropped)"
  }
}
