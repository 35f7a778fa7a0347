// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// An operation of a session fuzzer's input: one byte, taken modulo the number of cases.
protocol FuzzOperation: RawRepresentable where RawValue == UInt8 {
  /// Advances the clock by the input's length of time.
  static var advance: Self { get }
  /// Delivers the input's bytes with the session's cookie patched in.
  static var ownCookieDatagram: Self { get }
}

/// A seed input under construction for a session fuzzer, in the input's own format: the
/// opening (flags, the config's fields, the generator's seed), then operations; the
/// server's datagrams are encoded by the real encoder (Samples.packets).
struct SeedProgram<Operation: FuzzOperation> {
  var bytes: [UInt8]

  /// `config`: the config's fields as the target reads them (see ``fields(_:)``).
  init(flags: UInt8, config: [UInt8] = []) {
    bytes = [flags] + config + [0, 0, 0, 0, 0, 0, 0, 1]
  }

  /// 16-bit fields, big-endian.
  static func fields(_ values: [UInt16]) -> [UInt8] {
    values.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
  }

  mutating func op(_ operation: Operation, _ operands: [UInt8] = []) {
    bytes.append(operation.rawValue)
    bytes += operands
  }

  /// Advances the clock by `seconds` (unit index 3: seconds).
  mutating func wait(seconds: UInt16) {
    op(.advance, [3, UInt8(seconds >> 8), UInt8(seconds & 0xFF)])
  }

  /// Delivers `name` (a packet of Samples) with the session's cookie patched in.
  mutating func deliver(_ name: String) {
    op(.ownCookieDatagram, Self.sized(Samples.packet(name)))
  }

  /// `packet`'s encoding after its 16-bit length, as a datagram operation reads it.
  static func sized(_ packet: [UInt8]) -> [UInt8] {
    [UInt8(packet.count >> 8), UInt8(packet.count & 0xFF)] + packet
  }

  /// Accepted (flags 0), then 30 s of silence from the server.
  static var silent: Self {
    var program = Self(flags: 0)
    program.wait(seconds: 30)
    return program
  }

  /// Accepted (flags 0): `name` arrives, then an ack 2 s later, then 25 s pass.
  static func accepted(then name: String) -> Self {
    var program = Self(flags: 0)
    program.deliver(name)
    program.wait(seconds: 2)
    program.deliver("ack")
    program.wait(seconds: 25)
    return program
  }

  /// Not accepted (flags 4): 3 s pass, then `name` arrives, then 5 s.
  static func unanswered(then name: String) -> Self {
    var program = Self(flags: 4)
    program.wait(seconds: 3)
    program.deliver(name)
    program.wait(seconds: 5)
    return program
  }
}

/// A target's seeds, by name.
struct SeedList<Operation: FuzzOperation> {
  private(set) var all: [(name: String, bytes: [UInt8])] = []

  /// The stories every session target starts from, named in its profile's words: `silent`
  /// (accepted, then 30 s of silence); `live`-NAME (accepted, then the sample packet NAME)
  /// for each message both profiles take and each of the profile's `afterAccept`;
  /// `opening`-NAME (not accepted, NAME comes 3 s in) for a KICK and each of `unanswered`.
  init(
    silent: String, live: String, afterAccept: [String], opening: String,
    unanswered: [String]
  ) {
    add(silent, .silent)
    for name in ["ack", "kick", "token-expired", "session-unknown"] + afterAccept {
      add("\(live)-\(name)", .accepted(then: name))
    }
    for name in ["kick"] + unanswered { add("\(opening)-\(name)", .unanswered(then: name)) }
  }

  mutating func add(_ name: String, _ program: SeedProgram<Operation>) {
    all.append((name, program.bytes))
  }
}
