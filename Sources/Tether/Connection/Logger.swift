import CTetherABI

/// The app's optional `on_log` callback and its context (both handlers have one).
struct Logger {
  let callback:
    (@convention(c) (UnsafeMutableRawPointer?, tether_log_level, UnsafePointer<CChar>?) -> Void)?
  let context: UnsafeMutableRawPointer?

  /// Sends `text`, then `number` in decimal if given, to the app's on_log. Built from
  /// bytes, not String: the Embedded library carries no string formatting.
  func log(_ level: LogLevel, _ text: StaticString, _ number: Int64? = nil) {
    guard let callback else { return }
    var line = [UInt8](UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    if let number { appendDecimal(number, to: &line) }
    line.append(0)
    line.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) {
        callback(context, tether_log_level(UInt32(level.rawValue)), $0.baseAddress)
      }
    }
  }
}

/// Appends " <number>" in decimal.
func appendDecimal(_ number: Int64, to line: inout [UInt8]) {
  line.append(UInt8(ascii: " "))
  if number < 0 { line.append(UInt8(ascii: "-")) }
  // Highest digit first, with no scratch array.
  let magnitude = number.magnitude
  var divisor: UInt64 = 1
  while divisor <= magnitude / 10 { divisor *= 10 }
  repeat {
    line.append(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))
    divisor /= 10
  } while divisor > 0
}

enum LogLevel: Int32 {
  case error = 1
  case warning = 2
  case info = 3
  case debug = 4
}
