// SPDX-License-Identifier: Apache-2.0
@_spi(Link) import TetherCore

/// What a session itself wrote, before protocol version 2's layer rewrote its datagrams:
/// a notification, or a version 1 packet (with the session's own cookie).
public enum SessionWrote<Notification> {
  case notified(Notification)
  case sent(Packet)
  /// Bytes that do not decode as a packet (no session writes one: a check says so).
  case undecodable([UInt8])
}

/// A session as ``SecureLink`` drives it, with everything the session writes recorded as
/// it writes it. The layer rewrites the session's datagrams in place (and, for a datagram
/// from the socket, calls the session itself), so a driver sees only version 2's bytes;
/// the simulation's checks are about the session, so they read this record instead. Every
/// write of a session happens in ``handle(_:now:into:)`` or ``fire(_:due:now:into:)``
/// (LinkSession.swift), which this forwards and watches; the rest is the session's own.
struct RecordedSession<Inner: LinkSession>: LinkSession {
  typealias Notification = Inner.Notification
  var inner: Inner
  var wrote: [SessionWrote<Notification>] = []
  /// The first message the session was handed (what a datagram through the layer was, for
  /// the session): nil if the layer gave it none.
  var handed: Message?

  var link: LinkCore {
    get { inner.link }
    _modify { yield &inner.link }
  }

  var ownDue: Instant? { inner.ownDue }

  mutating func handle(
    _ message: Message, now: Instant, into output: inout SessionOutput<Notification>
  ) {
    let first = output.actionCount
    if handed == nil { handed = message }
    inner.handle(message, now: now, into: &output)
    record(output, from: first)
  }

  mutating func fire(
    _ kind: LinkDeadline, due: Instant, now: Instant,
    into output: inout SessionOutput<Notification>
  ) {
    let first = output.actionCount
    inner.fire(kind, due: due, now: now, into: &output)
    record(output, from: first)
  }

  /// Records the actions of `output` from `first` on (before the layer rewrites them).
  mutating func record(_ output: SessionOutput<Notification>, from first: Int) {
    wrote += Self.written(output, from: first)
  }

  /// The actions of `output` from `first` on, as the session wrote them.
  static func written(_ output: SessionOutput<Notification>, from first: Int)
    -> [SessionWrote<Notification>]
  {
    output.actions[first...].map { action in
      switch action {
      case .notify(let n): return .notified(n)
      case .send(let d):
        let bytes = output.bytes(of: d)
        return (try? Packet.decode(bytes)).map { .sent($0) } ?? .undecodable(Array(bytes))
      }
    }
  }
}

/// A session and its version 2 layer, driven as the driver drives them: each entry point,
/// then the layer's rewrite; each datagram through the layer. What the session wrote is
/// returned; the output holds what goes on the wire.
struct SecureDriver {
  /// Runs `body` (an entry point of `session`), then the layer's rewrite.
  static func call<S: LinkSession, C: SessionCrypto, T, E: Error>(
    _ session: inout S, link: inout SecureLink<C>, now: Instant,
    output: inout SessionOutput<S.Notification>,
    _ body: (inout S, Instant, inout SessionOutput<S.Notification>) throws(E) -> T
  ) throws(E) -> (T, [SessionWrote<S.Notification>]) {
    let first = output.actionCount
    let result: T
    do throws(E) {
      result = try body(&session, now, &output)
    } catch {
      // A refused call writes nothing the layer would touch; still, run it as the driver does.
      _ = secure(&session, link: &link, now: now, output: &output, from: first, before: [])
      throw error
    }
    let before = RecordedSession<S>.written(output, from: first)
    let wrote = secure(
      &session, link: &link, now: now, output: &output, from: first, before: before)
    return (result, wrote)
  }

  private static func secure<S: LinkSession, C: SessionCrypto>(
    _ session: inout S, link: inout SecureLink<C>, now: Instant,
    output: inout SessionOutput<S.Notification>, from first: Int,
    before: [SessionWrote<S.Notification>]
  ) -> [SessionWrote<S.Notification>] {
    var recorded = RecordedSession(inner: session, wrote: before)
    link.secure(&output, from: first, session: &recorded, now: now)
    session = recorded.inner
    return recorded.wrote
  }

  /// One datagram from the socket, through the layer: what the session wrote, and the
  /// message it was handed (nil: the layer kept the datagram from it).
  static func receive<S: LinkSession, C: SessionCrypto>(
    _ datagram: ArraySlice<UInt8>, _ session: inout S, link: inout SecureLink<C>, now: Instant,
    output: inout SessionOutput<S.Notification>
  ) -> (wrote: [SessionWrote<S.Notification>], handed: Message?) {
    var recorded = RecordedSession(inner: session)
    link.receive(datagram, session: &recorded, now: now, into: &output)
    session = recorded.inner
    return (recorded.wrote, recorded.handed)
  }
}
