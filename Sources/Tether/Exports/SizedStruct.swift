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

/// The size of the first published struct of tether.h that has `pointers` pointers after
/// its `uint32_t size` (padded to a pointer's alignment): what a struct the app did not
/// initialise is told apart by.
func firstPublishedSize(pointers: Int) -> Int {
  MemoryLayout<UnsafeRawPointer>.stride * (1 + pointers)
}

/// The app's handler (`given`) read into `handler` as a connection keeps it
/// (``readHandler(_:minimum:into:)``); the first published handler had `callbacks`
/// callbacks.
/// - Throws: ``TetherError/invalidArgument`` when `given` declares less than that (the app
///   did not call its `*_handler_init`: its callbacks would never be called).
func readHandler<Handler>(
  _ given: UnsafePointer<Handler>?, callbacks: Int, into handler: inout Handler
) throws(TetherError) {
  let minimum = firstPublishedSize(pointers: callbacks)
  let read = withUnsafeMutableBytes(of: &handler) { readHandler(given, minimum: minimum, into: $0) }
  guard read else { throw .invalidArgument }
}

/// `tether_engine_handler_init` and `tether_rtm_handler_init`: the handler a connection
/// keeps when the app gives none (every callback NULL, `size` this build's). NULL: nothing.
func initializeHandler<Handler>(_ handler: UnsafeMutablePointer<Handler>?) {
  guard let handler else { return }
  let bytes = UnsafeMutableRawBufferPointer(start: handler, count: MemoryLayout<Handler>.size)
  _ = readHandler(nil, minimum: 0, into: bytes)
}

/// Reads the app's handler (`given`: a `tether_engine_handler` or a `tether_rtm_handler`)
/// into `handler`, that struct as a connection keeps it: read up to the size the app
/// declared, every callback past that NULL, and `size` this build's; all NULL when `given`
/// is NULL. False when the declared size is below `minimum`. (On bytes: one copy for both
/// profiles.)
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
let minimumConfigSize = firstPublishedSize(pointers: 2)

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
