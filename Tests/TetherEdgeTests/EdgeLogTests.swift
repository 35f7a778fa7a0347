// SPDX-License-Identifier: Apache-2.0
import Logging
import Synchronization
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The operator's log: one line per session event through swift-log and the edge's own
/// handler, `TIMESTAMP LEVEL MESSAGE key=value ...`.
struct EdgeLogTests {
  /// Keeps every line a handler writes.
  final class Captured: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: LogSink { LogSink { line in self.lines.withLock { $0.append(line) } } }
  }

  static func logger(_ captured: Captured, level: Logger.Level = .info) -> Logger {
    Logger(label: "test") { _ in EdgeLogHandler(level: level, sink: captured.sink) }
  }

  /// A line split into its timestamp, level, message and fields (values unquoted as the
  /// tests' values need: none has a space but `lobby 2`).
  struct Parsed: Equatable {
    var level: String
    var message: String
    var fields: [String: String]
  }

  static func parse(_ line: String) throws -> Parsed {
    let words = line.split(separator: " ", maxSplits: 3).map(String.init)
    try #require(words.count >= 3)
    #expect(isTimestamp(words[0]), "\(words[0])")
    var fields: [String: String] = [:]
    var rest = words.count > 3 ? Substring(words[3]) : ""
    while let equals = rest.firstIndex(of: "=") {
      let key = String(rest[..<equals])
      rest = rest[rest.index(after: equals)...]
      let value: Substring
      if rest.first == "\"" {
        let body = rest.dropFirst()
        let close = try #require(body.firstIndex(of: "\""))
        value = body[..<close]
        rest = body[body.index(after: close)...].drop { $0 == " " }
      } else {
        let end = rest.firstIndex(of: " ") ?? rest.endIndex
        value = rest[..<end]
        rest = rest[end...].drop { $0 == " " }
      }
      fields[key] = String(value)
    }
    return Parsed(level: words[1], message: words[2], fields: fields)
  }

  /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
  static func isTimestamp(_ text: String) -> Bool {
    let shape = Array("0000-00-00T00:00:00.000Z".utf8)
    let bytes = Array(text.utf8)
    guard bytes.count == shape.count else { return false }
    return zip(bytes, shape).allSatisfy { byte, want in
      want == UInt8(ascii: "0") ? (0x30...0x39).contains(byte) : byte == want
    }
  }

  // MARK: - Format

  @Test func wallTime_isISO8601InUTC_withMilliseconds() {
    #expect(WallTime(seconds: 0, milliseconds: 0).iso8601 == "1970-01-01T00:00:00.000Z")
    #expect(
      WallTime(seconds: 1_700_000_000, milliseconds: 5).iso8601 == "2023-11-14T22:13:20.005Z")
    #expect(
      WallTime(seconds: 951_782_400, milliseconds: 999).iso8601 == "2000-02-29T00:00:00.999Z")
  }

  @Test func line_hasTimeLevelMessage_andSortedFields_quotedWhenNeeded() {
    let line = EdgeLogHandler.line(
      time: WallTime(seconds: 0, milliseconds: 42), level: .info, message: "join",
      fields: ["uid": "7", "channel": "my room", "empty": "", "q": "a\"b=c"])
    #expect(
      line == #"1970-01-01T00:00:00.042Z info join channel="my room" empty="" q="a\"b=c" uid=7"#)
  }

  @Test func handler_dropsRecordsBelowItsLevel() {
    let captured = Captured()
    let logger = Self.logger(captured, level: .notice)
    logger.info("hidden")
    logger.notice("shown", metadata: ["k": "v"])
    #expect(captured.all.count == 1)
    #expect(captured.all.first?.hasSuffix(" notice shown k=v") == true)
  }

  // MARK: - Session events

  /// `events` through the log handler: the lines, and each parsed.
  static func logged(_ events: [EdgeEvent]) throws -> (lines: [String], parsed: [Parsed]) {
    let captured = Captured()
    let logger = Self.logger(captured)
    for event in events { logger.log(event) }
    return (captured.all, try captured.all.map(Self.parse))
  }

  /// Channel sessions: three join (one in a channel whose name has a space), one is kicked
  /// with a ban, one leaves.
  @Test func channelSession_logsOneLinePerEvent_withItsFields() throws {
    var config = World.config()
    config.recordsEvents = true
    var world = World(config: config)
    for _ in 0..<3 { world.addClient() }
    try world.join(0, uid: 1)
    try world.join(1, uid: 2)
    try world.join(2, channel: "lobby 2", uid: 3)
    world.run(for: .seconds(2))
    let kick = AdminKick(
      channel: Fixture.channel, uid: 1, banSeconds: 30, unixTime: world.wallClock, nonce: 1
    ).sealed(appID: Fixture.appID, certificate: World.certificate)
    _ = world.server.admin(
      kick[...], from: PeerAddress(bytes: [0xAD])!, now: world.now, wallClock: world.wallClock)
    world.leave(1)
    world.run(for: .seconds(2))

    let (lines, parsed) = try Self.logged(world.server.takeEvents())
    #expect(
      parsed == [
        Parsed(level: "info", message: "join", fields: ["channel": "lobby", "uid": "1"]),
        Parsed(level: "info", message: "join", fields: ["channel": "lobby", "uid": "2"]),
        Parsed(level: "info", message: "join", fields: ["channel": "lobby 2", "uid": "3"]),
        Parsed(
          level: "info", message: "kick",
          fields: ["channel": "lobby", "uid": "1", "ban_seconds": "30"]),
        Parsed(
          level: "info", message: "leave",
          fields: ["channel": "lobby", "uid": "2", "cause": "quit"]),
      ])
    #expect(lines[2].contains(#"channel="lobby 2""#))
  }

  /// Login sessions: login, a channel joined, a takeover by a second login (remote-login),
  /// a kick of the user, and a grace that ends.
  @Test func loginSession_logsOneLinePerEvent_withItsFields() throws {
    var config = World.config()
    config.recordsEvents = true
    var bench = LoginBench(config: config)
    bench.logIn("alice", cookie: 1, from: LoginBench.address(0))
    bench.send(LoginBench.join("room", sequence: 1), cookie: 1, from: LoginBench.address(0))
    bench.send(LoginBench.login("alice"), cookie: 2, from: LoginBench.address(1))
    bench.logIn("bob", cookie: 3, from: LoginBench.address(2))
    let kick = AdminKickUser(
      userID: LoginBench.user("bob"), banSeconds: 0, unixTime: bench.wallClock, nonce: 1
    ).sealed(appID: Fixture.appID, certificate: World.certificate)
    _ = bench.server.receive(
      kick[...], from: PeerAddress(bytes: [0xAD])!, now: bench.now, wallClock: bench.wallClock)
    bench.run(until: .s(40))

    let (_, parsed) = try Self.logged(bench.server.takeEvents())
    #expect(
      parsed == [
        Parsed(level: "info", message: "login", fields: ["user": "alice"]),
        Parsed(level: "info", message: "login-join", fields: ["channel": "room", "user": "alice"]),
        Parsed(
          level: "info", message: "logout", fields: ["user": "alice", "cause": "remote-login"]),
        Parsed(level: "info", message: "login", fields: ["user": "alice"]),
        Parsed(level: "info", message: "login", fields: ["user": "bob"]),
        Parsed(level: "info", message: "kick-user", fields: ["user": "bob", "ban_seconds": "0"]),
        Parsed(
          level: "info", message: "logout", fields: ["user": "alice", "cause": "grace-ended"]),
      ])
  }
}
