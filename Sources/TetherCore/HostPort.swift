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
    guard let colon = text.lastIndex(of: UInt8(ascii: ":")) else { throw .missingPort }
    // The host is text[start..<end]: what is before the colon, but the brackets of
    // "[v6]:port". (Indices, not dropFirst and dropLast: each is a generic specialization
    // in the Embedded library.)
    var (start, end) = (0, colon)
    bracketed = text[0] == UInt8(ascii: "[")
    if bracketed {
      guard colon > 1, text[colon - 1] == UInt8(ascii: "]") else { throw .missingPort }
      (start, end) = (1, colon - 1)
    }
    guard let port = Self.port(text[(colon + 1)...]) else { throw .invalidPort }
    guard end > start, end - start < 256 else { throw .invalidHost }
    var colons = false
    // Copied byte by byte as it is checked: `Array(text[start..<end])` was a specialization
    // of its own (224 bytes of aarch64 text).
    var host: [UInt8] = []
    for byte in text[start..<end] {
      guard byte != 0 else { throw .invalidHost }
      colons = colons || byte == UInt8(ascii: ":")
      host.append(byte)
    }
    guard colons == bracketed else { throw .invalidHost }
    host.append(0)
    self.host = host
    self.port = port
  }

  private static func port(_ digits: ArraySlice<UInt8>) -> UInt16? {
    guard !digits.isEmpty, digits.count <= 5 else { return nil }
    var value: UInt32 = 0
    for digit in digits {
      guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
      value = value * 10 + UInt32(digit - UInt8(ascii: "0"))
    }
    return value <= 65535 ? UInt16(value) : nil
  }
}
