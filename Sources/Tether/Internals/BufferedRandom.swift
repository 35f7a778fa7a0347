// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

/// The kernel's random numbers, fetched eight at a time.
///
/// Each engine draws a cookie per join and a jitter per (re)join attempt. glibc's
/// arc4random makes one getrandom system call per request, which a burst of 10,000
/// sessions rejoining at once would pay 10,000 times; a buffer of eight values makes it
/// one call per eight draws, and every value is still the kernel's.
struct BufferedRandom: RandomNumberGenerator {
  private var values = InlineArray<8, UInt64>(repeating: 0)
  private var used = 8

  mutating func next() -> UInt64 {
    if used == 8 {
      withUnsafeMutableBytes(of: &values) { tether_sys_random($0.baseAddress, $0.count) }
      used = 0
    }
    defer { used += 1 }
    return values[used]
  }
}
