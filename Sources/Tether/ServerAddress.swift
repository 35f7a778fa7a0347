#if canImport(Glibc)
  import Glibc
#endif

/// An edge server endpoint: "a.b.c.d:port", "[v6]:port" or "name:port". Numeric forms are
/// parsed without any lookup; a name goes through getaddrinfo, which may block.
struct ServerAddress {
  var storage = sockaddr_storage()
  var length: socklen_t = 0
  var family: Int32 { Int32(storage.ss_family) }

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
    if !parseNumeric(host, port: port) && !resolve(host, port: port) { return nil }
  }

  private static func port(_ digits: ArraySlice<UInt8>) -> UInt16? {
    guard !digits.isEmpty, digits.count <= 5 else { return nil }
    var value: UInt32 = 0
    for d in digits {
      guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
      value = value * 10 + UInt32(d - UInt8(ascii: "0"))
    }
    return value <= 65535 ? UInt16(value) : nil
  }

  private mutating func parseNumeric(_ host: [UInt8], port: UInt16) -> Bool {
    var v4 = sockaddr_in()
    var v6 = sockaddr_in6()
    let ok4 = host.withUnsafeBufferPointer { h in
      h.withMemoryRebound(to: CChar.self) { inet_pton(AF_INET, $0.baseAddress, &v4.sin_addr) == 1 }
    }
    if ok4 {
      v4.sin_family = sa_family_t(AF_INET)
      v4.sin_port = port.bigEndian
      store(v4)
      return true
    }
    let ok6 = host.withUnsafeBufferPointer { h in
      h.withMemoryRebound(to: CChar.self) {
        inet_pton(AF_INET6, $0.baseAddress, &v6.sin6_addr) == 1
      }
    }
    guard ok6 else { return false }
    v6.sin6_family = sa_family_t(AF_INET6)
    v6.sin6_port = port.bigEndian
    store(v6)
    return true
  }

  private mutating func resolve(_ host: [UInt8], port: UInt16) -> Bool {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
    var result: UnsafeMutablePointer<addrinfo>?
    let status = host.withUnsafeBufferPointer { h in
      h.withMemoryRebound(to: CChar.self) { getaddrinfo($0.baseAddress, nil, &hints, &result) }
    }
    guard status == 0, let first = result else { return false }
    defer { freeaddrinfo(result) }
    guard let address = first.pointee.ai_addr,
      Int(first.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size
    else { return false }
    withUnsafeMutableBytes(of: &storage) { dst in
      dst.copyMemory(
        from: UnsafeRawBufferPointer(start: address, count: Int(first.pointee.ai_addrlen)))
    }
    length = first.pointee.ai_addrlen
    withUnsafeMutableBytes(of: &storage) { raw in
      // The port sits at the same offset in sockaddr_in and sockaddr_in6.
      raw.storeBytes(of: port.bigEndian, toByteOffset: 2, as: UInt16.self)
    }
    return family == AF_INET || family == AF_INET6
  }

  private mutating func store<T>(_ address: T) {
    withUnsafeMutableBytes(of: &storage) { dst in
      withUnsafeBytes(of: address) { src in dst.copyMemory(from: src) }
    }
    length = socklen_t(MemoryLayout<T>.size)
  }
}
