// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What fuzz-session and fuzz-login share: a session of their profile on a virtual clock,
/// driven by the input (datagrams, clock advances, the app's calls), with the profile's
/// properties checked after every entry point. A driver supplies the session, its calls
/// and its checks; the datagrams and the clock are run here, once for both.
protocol SessionFuzzer {
  associatedtype Session: FuzzedSession
  var session: Session { get set }
  var now: Instant { get set }
  /// The cookie of the current session (from its JOINs or LOGINs), 0 before the first.
  var cookie: UInt64 { get }
  /// Deadlines this input may still fire: a config with retries milliseconds apart and a
  /// give-up days away fires millions, legitimately; the input stops there (a cost cap,
  /// not a property: each firing is checked to move time forward).
  var firingsLeft: Int { get set }
  /// Reads the config and the opening of a run, or nil for a config the session refuses.
  init?(_ input: inout FuzzInput)
  /// Performs the next operation the input asks for.
  mutating func perform(_ input: inout FuzzInput)
  /// Hands `bytes` to the session (`decoded` is what they decode to) and checks the
  /// properties; returns what receive returned.
  mutating func receive(_ bytes: [UInt8], decoded: Packet?) -> WireError?
  /// Runs the session's deadlines due by `now` and checks the properties.
  mutating func advance()
}

/// What a fuzzer needs of a session: both profiles' sessions have it.
protocol FuzzedSession {
  var nextDeadline: Instant? { get }
}
extension ChannelSession: FuzzedSession {}
extension LoginSession: FuzzedSession {}

extension SessionFuzzer {
  /// One input: its opening, then operations until it ends (or its caps are reached).
  static func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    guard var driver = Self(&input) else { return 0 }
    var operations = 0
    while !input.isEmpty && operations < 512 && driver.firingsLeft > 0 {
      operations += 1
      driver.perform(&input)
    }
    return 0
  }

  /// A datagram of the input's bytes, as they come.
  mutating func deliverRaw(_ input: inout FuzzInput) {
    deliver(input.bytes(Int(input.u16() % 1300)))
  }

  /// A datagram of the input's bytes with this session's cookie patched in, so that the
  /// mutator's bytes reach the session rather than its cookie check.
  mutating func deliverOwnCookie(_ input: inout FuzzInput) {
    var bytes = input.bytes(Int(input.u16() % 1300))
    if bytes.count >= Packet.headerSize {
      for index in 4..<Packet.headerSize {
        bytes[index] = UInt8(truncatingIfNeeded: cookie >> UInt64(8 * (11 - index)))
      }
    }
    deliver(bytes)
  }

  /// `message` from the server, with this session's cookie.
  mutating func deliver(_ message: Message) {
    deliver(Packet(cookie: cookie, message: message).encoded)
  }

  /// A datagram that decodes re-encodes to the same bytes; receive and decode agree.
  mutating func deliver(_ bytes: [UInt8]) {
    let decoded = try? Packet.decode(bytes[...])
    if let decoded {
      require(decoded.encoded == bytes, "decode then encode changed \(bytes)")
    }
    let error = receive(bytes, decoded: decoded)
    require((error == nil) == (decoded != nil), "receive and decode disagree on \(bytes)")
  }

  /// Moves the clock by the input's length of time, firing every deadline on the way.
  mutating func wait(_ input: inout FuzzInput) {
    run(until: now + .milliseconds(input.milliseconds()))
  }

  /// Moves the clock to the session's next deadline, if it has one, and fires it.
  mutating func runToDeadline() {
    if let due = session.nextDeadline { run(until: due) }
  }

  /// Moves the clock to `time`, firing every deadline on the way at its instant.
  mutating func run(until time: Instant) {
    while let due = session.nextDeadline, due <= time {
      guard firingsLeft > 0 else { return }
      firingsLeft -= 1
      require(due > now || now.nanoseconds == .max, "deadline \(due) not after now \(now)")
      now = due
      advance()
    }
    now = time
  }
}
