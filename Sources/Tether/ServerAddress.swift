// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// An edge server's socket address (IPv4 or IPv6, with its port), as the kernel takes it.
struct ServerAddress {
  var address = tether_sys_address()

  /// A numeric host ("192.0.2.1", "::1"; NUL-terminated, no brackets) and `port`; nil if
  /// `host` is not numeric. Never looks anything up.
  init?(numericHost host: [UInt8], port: UInt16) {
    let parsed = host.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { chars in
        tether_sys_numeric_address(chars.baseAddress, port, &address) == 0
      }
    }
    guard parsed else { return nil }
  }

  init(_ address: tether_sys_address) { self.address = address }

  func same(as other: ServerAddress) -> Bool {
    var a = address
    var b = other.address
    return tether_sys_same_address(&a, &b) != 0
  }
}

/// What the app gave as the server: "a.b.c.d:port", "[v6]:port" or "name:port". A numeric
/// host is an address at once; a name is looked up off the loop's thread (``NameLookup``),
/// at create, at tether_set_server, and again while rejoins go unanswered.
///
/// (A struct rather than an enum of the two: valgrind found the Embedded build's outlined
/// copy of such an enum testing a tag bit in bytes the address case leaves unset.)
struct ServerEndpoint {
  /// The address, for a numeric host; nil for a name.
  let address: ServerAddress?
  /// The host name to look up (NUL-terminated); empty for a numeric host.
  let name: [UInt8]
  /// The port the name's addresses take.
  let port: UInt16

  /// Parses `text` (``HostPort``); nil when it is malformed (no port, a bad port, a host
  /// that is neither numeric nor a well-formed name).
  init?(_ text: [UInt8]) {
    guard let parsed = try? HostPort(parsing: text) else { return nil }
    port = parsed.port
    if let address = ServerAddress(numericHost: parsed.host, port: parsed.port) {
      self.address = address
      name = []
    } else if !parsed.bracketed
      && parsed.host.withUnsafeBytes({ Self.isHostName($0, count: $0.count - 1) })
    {
      address = nil
      name = parsed.host
    } else {
      return nil
    }
  }

  /// RFC 1123 host names: dot-separated labels of letters, digits, '-' (not at either end)
  /// and '_' (seen in private zones), each 1 to 63 bytes, at most 253 bytes in all; one
  /// final dot allowed. Judges the first `count` bytes of `name` (the host without its
  /// NUL), read in place.
  static func isHostName(_ name: UnsafeRawBufferPointer, count: Int) -> Bool {
    guard count >= 1, count <= name.count else { return false }
    let end = name[count - 1] == UInt8(ascii: ".") ? count - 1 : count
    guard end > 0, end <= 253 else { return false }
    // One pass, label by label (no split: it would cost the Embedded library a generic
    // specialization the size of this whole type).
    var label = 0
    var previous = UInt8(ascii: ".")
    for index in 0..<end {  // in place: no bounds check per byte
      let byte = name[index]
      if byte == UInt8(ascii: ".") {
        guard label > 0, previous != UInt8(ascii: "-") else { return false }
        label = 0
      } else {
        let ok =
          (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
          || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
          || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
          || byte == UInt8(ascii: "_")
          || (byte == UInt8(ascii: "-") && label > 0)
        guard ok, label < 63 else { return false }
        label += 1
      }
      previous = byte
    }
    return previous != UInt8(ascii: "-")
  }
}
