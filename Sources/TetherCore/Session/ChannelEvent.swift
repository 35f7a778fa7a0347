/// Every input of the channel session as one value, for tables, simulators and
/// property-based runs. ``ChannelSession/handle(_:now:into:)`` dispatches it to the
/// entry point of the same name.
public enum ChannelEvent: Equatable, Sendable {
  case join(token: Token, channel: ChannelName, uid: UInt32)
  case leave
  case renewToken(Token)
  case networkChanged(byUser: Bool)
  case endpointChanged
  case packet(Packet)
  /// The driver's timer fired (``ChannelSession/nextDeadline`` passed).
  case deadlineReached
}

extension ChannelSession {
  /// Feeds one event. Only the app's calls can throw, with the codes their own entry
  /// points document.
  public mutating func handle(_ event: ChannelEvent, now: Instant, into output: inout ChannelOutput)
    throws(TetherError)
  {
    switch event {
    case .join(let token, let channel, let uid):
      try join(token: token, channel: channel, uid: uid, now: now, into: &output)
    case .leave:
      leave(now: now, into: &output)
    case .renewToken(let token):
      try renewToken(token, now: now, into: &output)
    case .networkChanged(let byUser):
      networkChanged(byUser: byUser, now: now, into: &output)
    case .endpointChanged:
      endpointChanged(now: now, into: &output)
    case .packet(let packet):
      receive(packet, now: now, into: &output)
    case .deadlineReached:
      advance(to: now, into: &output)
    }
  }
}
