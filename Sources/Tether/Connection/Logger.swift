// SPDX-License-Identifier: Apache-2.0
import CTetherABI

/// The app's optional `on_log` callback and its context (both handlers have one).
struct Logger {
  let callback:
    (@convention(c) (UnsafeMutableRawPointer?, tether_log_level, UnsafePointer<CChar>?) -> Void)?
  let context: UnsafeMutableRawPointer?

  /// Room for a line: any text of this library, a number and the NUL.
  static let lineRoom = 160

  /// Sends `text`, then `number` in decimal if given, to the app's on_log. Built from
  /// bytes, not String: the Embedded library carries no string formatting; and on the
  /// stack, not in an Array: a line allocates nothing.
  @inline(never)  // one copy for every line logged
  func log(_ level: LogLevel, _ text: StaticString, _ number: Int64? = nil) {
    guard let callback else { return }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.lineRoom) { line in
      guard let base = line.baseAddress else { return }
      // Every text is a literal of this library, far shorter than the room; the cut only
      // keeps the number and the NUL inside it whatever the text.
      var count = min(text.utf8CodeUnitCount, Self.lineRoom - decimalRoom - 1)
      UnsafeMutableRawPointer(base).copyMemory(from: text.utf8Start, byteCount: count)
      if let number { count += writeDecimal(number, to: base + count) }
      base[count] = 0
      callback(
        context, tether_log_level(UInt32(level.rawValue)),
        UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self))
    }
  }
}

/// The most ``writeDecimal(_:to:)`` writes: " -9223372036854775808".
let decimalRoom = 21

/// Writes " <number>" in decimal at `destination`, which has room for ``decimalRoom``
/// bytes; returns how many it wrote.
func writeDecimal(_ number: Int64, to destination: UnsafeMutablePointer<UInt8>) -> Int {
  var next = destination
  next.pointee = UInt8(ascii: " ")
  next += 1
  if number < 0 {
    next.pointee = UInt8(ascii: "-")
    next += 1
  }
  // Highest digit first, with no scratch array.
  let magnitude = number.magnitude
  var divisor: UInt64 = 1
  while divisor <= magnitude / 10 { divisor *= 10 }
  repeat {
    next.pointee = UInt8(ascii: "0") + UInt8(magnitude / divisor % 10)
    next += 1
    divisor /= 10
  } while divisor > 0
  return next - destination
}

/// Appends " <number>" in decimal (``writeDecimal(_:to:)``, for an Array).
func appendDecimal(_ number: Int64, to line: inout [UInt8]) {
  withUnsafeTemporaryAllocation(of: UInt8.self, capacity: decimalRoom) { buffer in
    guard let base = buffer.baseAddress else { return }
    line.append(contentsOf: UnsafeBufferPointer(start: base, count: writeDecimal(number, to: base)))
  }
}

enum LogLevel: Int32 {
  case error = 1
  case warning = 2
  case info = 3
  case debug = 4
}
