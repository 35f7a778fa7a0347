// SPDX-License-Identifier: Apache-2.0
/// A profile's session around its ``LinkCore``: the channel session and the login session
/// both are. Its entry points for datagrams and deadlines exist here once; each profile
/// gives only what is its own: how it handles a message that is this session's, how it
/// fires a deadline, and its own next deadline, if it has one.
///
/// The requirements are the seam between the link and the profile, not calls for an app:
/// they are SPI (`Link`), and the entry points below are what a driver calls. Embedded
/// Swift specializes these per session, as each profile had its own copy before.
public protocol LinkSession {
  associatedtype Notification: SessionNotification

  /// The machinery both profiles share.
  @_spi(Link) var link: LinkCore { get set }

  /// The profile's own next deadline while live (the channel's member verdicts); nil when
  /// it has none.
  @_spi(Link) var ownDue: Instant? { get }

  /// Acts on `message`, which the link found is this session's and arrived at `now`.
  /// (Each session's is a call of a private body: the optimizer may reshape a private
  /// function's arguments, not a public one's; about 270 bytes of aarch64 text.)
  @_spi(Link) mutating func handle(
    _ message: Message, now: Instant, into output: inout SessionOutput<Notification>)

  /// Acts on `kind`, due at `due`, which ``advance(to:into:)`` found has passed by `now`.
  /// Each firing moves its own deadline past `now` or removes it.
  @_spi(Link) mutating func fire(
    _ kind: LinkDeadline, due: Instant, now: Instant,
    into output: inout SessionOutput<Notification>)
}

// MARK: - Packets from the edge server

extension LinkSession {
  /// Decodes and handles one datagram. A datagram that does not decode is counted in the
  /// session's counters and its error returned (for a log); it changes nothing else.
  /// Either way, what fell due by `now` runs, as after every entry point.
  @discardableResult
  public mutating func receive(
    datagram: ArraySlice<UInt8>, now: Instant, into output: inout SessionOutput<Notification>
  ) -> WireError? {
    let (message, error) = link.take(datagram, now: now)
    if let message { handle(message, now: link.clock, into: &output) }
    advance(to: link.clock, into: &output)
    return error
  }

  /// Handles one decoded packet. A packet whose cookie is not this session's is counted
  /// and ignored; so is any packet the current state has no use for.
  public mutating func receive(
    _ packet: Packet, now: Instant, into output: inout SessionOutput<Notification>
  ) {
    if let message = link.take(packet, now: now) { handle(message, now: link.clock, into: &output) }
    advance(to: link.clock, into: &output)
  }
}

// MARK: - Deadlines

extension LinkSession {
  /// Does everything due by `now`, earliest first: the driver calls this when
  /// ``nextDeadline`` passes (calling it early, or late, is harmless), and so does every
  /// entry point before it returns. Each firing moves its own deadline past `now` or
  /// removes it, so the loop ends; its bound is a belt for the braces.
  public mutating func advance(to now: Instant, into output: inout SessionOutput<Notification>) {
    let now = link.tick(now)
    for _ in 0..<64 {
      let own = ownDue
      guard let due = link.earliestDueInPlace(own: own), due.at <= now else { return }
      fire(due.kind, due: due.at, now: now, into: &output)
    }
  }

  /// The earliest instant at which ``advance(to:into:)`` has something to do; nil when
  /// nothing is scheduled (DISCONNECTED, and the channel's FAILED or the login's ABORTED).
  /// After any entry point returns, it is later than the `now` that entry point was given.
  public var nextDeadline: Instant? { link.earliestDue(own: ownDue)?.at }

  /// When the driver must next call ``advance(to:into:)``: not before the window's start
  /// and by its end (see ``DeadlineWindow``); nil when nothing is scheduled.
  public var nextDeadlineWindow: DeadlineWindow? { link.window(own: ownDue) }

  /// ``nextDeadlineWindow``, read where the session is held: the driver asks it after every
  /// event, and a getter called on a stored session copied all of it (480 bytes of a
  /// channel session, and its link again) to the stack first (issue 26).
  public mutating func windowInPlace() -> DeadlineWindow? {
    let own = ownDue
    return link.window(own: own)
  }
}
