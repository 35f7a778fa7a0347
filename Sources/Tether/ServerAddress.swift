import CTetherSystem

/// An edge server endpoint: "a.b.c.d:port", "[v6]:port" or "name:port". Numeric forms are
/// parsed without any lookup; a name goes through getaddrinfo, which may block.
struct ServerAddress {
  var address = tether_sys_address()

  /// Parses `text`; nil when it is malformed or a name does not resolve.
  init?(_ text: [UInt8]) {
    guard let colon = text.lastIndex(of: UInt8(ascii: ":")), colon > 0,
      let port = Self.port(text[(colon + 1)...])
    else { return nil }
    var host = Array(text[..<colon])
    if host.first == UInt8(ascii: "[") {
      guard host.last == UInt8(ascii: "]"), host.count > 2 else { return nil }
      host = Array(host.dropFirst().dropLast())
    }
    guard !host.contains(0), host.count < 256 else { return nil }
    host.append(0)
    let resolved = host.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { chars in
        tether_sys_resolve(chars.baseAddress, port, 0, &address) == 0
          || tether_sys_resolve(chars.baseAddress, port, 1, &address) == 0
      }
    }
    guard resolved else { return nil }
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
