// SPDX-License-Identifier: Apache-2.0
/// A server's "host:port" text, split: the one parser of it, for the driver (the `server` of
/// tether.h's configs) and for tether-edge (`--listen`, `--server`). The port is 1 to 5
/// decimal digits, at most 65535, after the last colon. An IPv6 host is in brackets
/// ("[::1]:7000"), and only an IPv6 host: a bracketed host has a colon, any other host has
/// none ("::1:7000" is refused, not guessed at). Whether the host is a number or a name is
/// the caller's to judge (the driver looks names up; the edge takes numbers only).
package struct HostPort {
  /// Why a text was refused.
  package enum Failure: Error, Equatable {
    /// No colon, or a "[" whose "]" is not right before the last colon.
    case missingPort
    /// The port is not 1 to 5 decimal digits, or is above 65535.
    case invalidPort
    /// The host is empty, longer than 255 bytes, holds a NUL, or has a colon where it may
    /// not (see the type).
    case invalidHost
  }

  /// The host without its brackets, then a NUL (for inet_pton or getaddrinfo).
  package let host: [UInt8]
  package let port: UInt16
  /// True for "[host]:port": the host is then meant as an IPv6 address.
  package let bracketed: Bool

  // Inlined, its one caller in the Embedded library drops the reasons: 144 bytes less.
  @inline(__always)
  package init(parsing text: [UInt8]) throws(Failure) {
    var host: [UInt8] = []
    var port: UInt16 = 0
    var bracketed = false
    let failure = text.withUnsafeBytes {
      Self.parse($0, host: &host, port: &port, bracketed: &bracketed)
    }
    if let failure { throw failure }
    self.host = host
    self.port = port
    self.bracketed = bracketed
  }

  /// The parse, over the text's bytes in place (every index below is checked against the
  /// text's count once, where it is made; no bounds check per byte): why it was refused,
  /// or nil with `host`, `port` and `bracketed` set.
  private static func parse(
    _ text: UnsafeRawBufferPointer, host: inout [UInt8], port: inout UInt16,
    bracketed: inout Bool
  ) -> Failure? {
    var colon = text.count - 1  // the last colon
    while colon >= 0, text[colon] != UInt8(ascii: ":") { colon -= 1 }
    guard colon >= 0 else { return .missingPort }
    // The host is text[start..<end]: what is before the colon, but the brackets of
    // "[v6]:port".
    var (start, end) = (0, colon)
    bracketed = text[0] == UInt8(ascii: "[")
    if bracketed {
      guard colon > 1, text[colon - 1] == UInt8(ascii: "]") else { return .missingPort }
      (start, end) = (1, colon - 1)
    }
    let digits = text.count - colon - 1
    guard digits >= 1, digits <= 5 else { return .invalidPort }
    var value: UInt32 = 0
    for index in (colon + 1)..<text.count {
      let digit = text[index]
      guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return .invalidPort }
      value = value * 10 + UInt32(digit - UInt8(ascii: "0"))
    }
    guard value <= 65535 else { return .invalidPort }
    port = UInt16(value)
    guard end > start, end - start < 256 else { return .invalidHost }
    var colons = false
    // Copied byte by byte as it is checked: `Array(text[start..<end])` was a specialization
    // of its own (224 bytes of aarch64 text).
    for index in start..<end {
      let byte = text[index]
      guard byte != 0 else { return .invalidHost }
      colons = colons || byte == UInt8(ascii: ":")
      host.appendByte(byte)
    }
    guard colons == bracketed else { return .invalidHost }
    host.appendByte(0)
    return nil
  }
}
