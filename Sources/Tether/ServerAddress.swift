import CTetherSystem

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

  /// Parses `text`; nil when it is malformed (no port, a bad port, a host that is neither
  /// numeric nor a well-formed name).
  init?(_ text: [UInt8]) {
    guard let colon = text.lastIndex(of: UInt8(ascii: ":")), colon > 0,
      let port = Self.port(text[(colon + 1)...])
    else { return nil }
    // The host is text[start..<end]: what is before the colon, but the brackets of
    // "[v6]:port". (Indices, not dropFirst and dropLast: each is a generic specialization
    // in the Embedded library.)
    var (start, end) = (0, colon)
    let bracketed = text[0] == UInt8(ascii: "[")
    if bracketed {
      guard text[colon - 1] == UInt8(ascii: "]"), colon > 2 else { return nil }
      (start, end) = (1, colon - 1)
    }
    guard end - start < 256 else { return nil }
    // The host and a NUL, for inet_pton or getaddrinfo.
    var host = Array(text[start..<end])
    guard !host.contains(0) else { return nil }
    host.append(0)
    self.port = port
    if let address = ServerAddress(numericHost: host, port: port) {
      self.address = address
      name = []
    } else if !bracketed && Self.isHostName(text[start..<end]) {
      address = nil
      name = host
    } else {
      return nil
    }
  }

  /// RFC 1123 host names: dot-separated labels of letters, digits, '-' (not at either end)
  /// and '_' (seen in private zones), each 1 to 63 bytes, at most 253 bytes in all; one
  /// final dot allowed.
  static func isHostName(_ name: ArraySlice<UInt8>) -> Bool {
    let end = name.last == UInt8(ascii: ".") ? name.endIndex - 1 : name.endIndex
    guard end > name.startIndex, end - name.startIndex <= 253 else { return false }
    // One pass, label by label (no split: it would cost the Embedded library a generic
    // specialization the size of this whole type).
    var label = 0
    var previous = UInt8(ascii: ".")
    for byte in name[..<end] {
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
