// SPDX-License-Identifier: Apache-2.0
/// The fuzzer's input read as a little program: bytes taken front to back, zero once it
/// runs out (so every input, however short, is a complete program and the mutator's
/// changes stay local).
struct FuzzInput {
  private var rest: UnsafeRawBufferPointer

  init(_ start: UnsafeRawPointer, _ count: Int) {
    rest = UnsafeRawBufferPointer(start: start, count: count)
  }

  var isEmpty: Bool { rest.isEmpty }

  mutating func u8() -> UInt8 {
    guard let first = rest.first else { return 0 }
    rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst())
    return first
  }

  mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }
  mutating func u32() -> UInt32 { UInt32(u16()) << 16 | UInt32(u16()) }
  mutating func u64() -> UInt64 { UInt64(u32()) << 32 | UInt64(u32()) }
  mutating func bool() -> Bool { u8() & 1 == 1 }

  /// Up to `count` bytes (fewer when the input ends first).
  mutating func bytes(_ count: Int) -> [UInt8] {
    let taken = Array(rest.prefix(count))
    rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(taken.count))
    return taken
  }

  /// One of `choices`, picked by the next byte.
  mutating func pick<T>(_ choices: [T]) -> T { choices[Int(u8()) % choices.count] }

  /// A value of `table` (picked by the next byte), or, for one byte value in
  /// `table.count + 1`, any 32-bit value read next.
  mutating func pick(_ table: [UInt32], orAny: Bool) -> UInt32 {
    let choice = Int(u8()) % (table.count + 1)
    return choice < table.count ? table[choice] : u32()
  }

  /// A length of time: a 16-bit count of one of several units, so short and long waits
  /// (milliseconds to hours) are each one mutation away.
  mutating func milliseconds() -> UInt64 {
    let unit: UInt64 = pick([1, 10, 250, 1000, 60_000])
    return UInt64(u16()) * unit
  }
}

/// Stops the fuzzer with `message` when `condition` is false: a property that must hold
/// for every input. `fatalError` keeps its message in optimized builds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("property violated: \(message())") }
}
