// SPDX-License-Identifier: Apache-2.0
#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The convention of every struct tether.h takes in (configs, handlers): its first field is
/// `uint32_t size`, and a caller compiled against an older, shorter struct is read up to
/// the size it declares, the rest taken from `defaults`.
///
/// Returns nil when the declared size is below `minimum` (what the first published struct
/// held: the caller did not initialise it). The result's `size` is whatever the caller
/// wrote; callers that keep the struct set it to this build's size.
func readSized<T>(_ given: UnsafePointer<T>, minimum: Int, defaults: T) -> T? {
  let declared = Int(UnsafeRawPointer(given).load(as: UInt32.self))
  guard declared >= minimum else { return nil }
  var value = defaults
  let count = min(declared, MemoryLayout<T>.size)
  withUnsafeMutableBytes(of: &value) { destination in
    destination.copyMemory(from: UnsafeRawBufferPointer(start: given, count: count))
  }
  return value
}

/// Reads the app's handler (`given`: a `tether_engine_handler` or a `tether_rtm_handler`)
/// into `handler`, that struct as a connection keeps it: read up to the size the app
/// declared, every callback past that NULL, and `size` this build's; all NULL when `given`
/// is NULL. False when the declared size is below `minimum` (the app did not call its
/// `*_handler_init`: its callbacks would never be called). (On bytes, not generic: one
/// copy for both profiles.)
func readHandler(
  _ given: UnsafeRawPointer?, minimum: Int, into handler: UnsafeMutableRawBufferPointer
) -> Bool {
  handler.initializeMemory(as: UInt8.self, repeating: 0)
  if let given {
    let declared = Int(given.load(as: UInt32.self))
    guard declared >= minimum else { return false }
    handler.copyMemory(
      from: UnsafeRawBufferPointer(start: given, count: min(declared, handler.count)))
  }
  handler.storeBytes(of: UInt32(handler.count), as: UInt32.self)
  return true
}

/// The size of the first published config of both profiles: `size`, `app_id`, `server`.
let minimumConfigSize = MemoryLayout<(UInt32, UnsafePointer<CChar>?, UnsafePointer<CChar>?)>
  .size

extension RetryPolicy {
  /// The backoff of both configs' last two fields, `retry_base_ms` and `retry_cap_ms`.
  init(milliseconds base: UInt32, _ cap: UInt32) {
    self.init(base: .milliseconds(UInt64(base)), cap: .milliseconds(UInt64(cap)))
  }

  /// `retry_base_ms` and `retry_cap_ms` of this policy.
  var milliseconds: (base: UInt32, cap: UInt32) {
    (base.clampedMilliseconds, cap.clampedMilliseconds)
  }
}
