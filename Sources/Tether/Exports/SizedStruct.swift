// SPDX-License-Identifier: Apache-2.0
import CTetherABI

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
  for index in 0..<handler.count { handler[index] = 0 }  // a loop, not a specialization
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

// MARK: - What both profiles' structs share

/// The fields both configs (`tether_engine_config`, `tether_rtm_config`) share: `size`,
/// the app id, the server and the link's (``LinkConfig``). What reads and writes them is
/// written once here; each profile adds its own thresholds.
protocol ConfigStruct {
  init()
  var size: UInt32 { get set }
  var app_id: UnsafePointer<CChar>! { get }
  var server: UnsafePointer<CChar>! { get }
  var interrupted_after_ms: UInt32 { get set }
  var heartbeat_interval_ms: UInt32 { get set }
  var retry_base_ms: UInt32 { get set }
  var retry_cap_ms: UInt32 { get set }
  var own_lateness_off: UInt32 { get set }
  var bind_interface: UnsafePointer<CChar>! { get }
}

extension tether_engine_config: ConfigStruct {}
extension tether_rtm_config: ConfigStruct {}

extension ConfigStruct {
  /// A config of this build's `size` whose link fields hold these defaults (and
  /// ``RetryPolicy``'s); the profile's own fields are the profile's to set.
  init(interruptedAfter: Interval, heartbeatInterval: Interval) {
    self.init()
    size = UInt32(MemoryLayout<Self>.size)
    interrupted_after_ms = interruptedAfter.clampedMilliseconds
    heartbeat_interval_ms = heartbeatInterval.clampedMilliseconds
    (retry_base_ms, retry_cap_ms) = RetryPolicy().milliseconds
  }

  /// The core config of the app id and the link fields; the profile reads its own fields
  /// into it, then validates it.
  /// - Throws: ``TetherError/invalidAppID`` when the app id is NULL or malformed.
  @inline(__always)  // armv7's -O keeps a copy per profile beside its one caller: 400 bytes
  func linkConfig<Config: LinkConfig>() throws(TetherError) -> Config {
    var config = Config(appID: try appID(app_id))
    config.interruptedAfter = .milliseconds(UInt64(interrupted_after_ms))
    config.heartbeatInterval = .milliseconds(UInt64(heartbeat_interval_ms))
    config.retry = RetryPolicy(milliseconds: retry_base_ms, retry_cap_ms)
    return config
  }
}

/// Both handlers (`tether_engine_handler`, `tether_rtm_handler`). (Their on_log cannot be
/// a requirement: a C function pointer field witnesses no Swift property.)
protocol HandlerStruct { init() }

extension tether_engine_handler: HandlerStruct {}
extension tether_rtm_handler: HandlerStruct {}

/// The app's callbacks of one profile (``ChannelCallbacks``, ``LoginCallbacks``): its
/// handler, copied at create up to the size the app declared (the rest NULL), and its
/// context pointer.
protocol AppCallbacks {
  associatedtype Handler: HandlerStruct
  /// How many callbacks the first published handler held after `size`.
  static var firstPublishedCallbacks: Int { get }
  init(handler: Handler, context: UnsafeMutableRawPointer?)
  /// The app's on_log.
  var logger: Logger { get }
}

extension AppCallbacks {
  /// The app's handler `given` (NULL: every callback NULL) read as a connection keeps it.
  /// - Throws: ``TetherError/invalidArgument`` when `given` declares less than the first
  ///   published handler (the app did not call its `*_handler_init`: its callbacks would
  ///   never be called).
  init(_ given: UnsafePointer<Handler>?, context: UnsafeMutableRawPointer?) throws(TetherError) {
    var handler = Handler()
    let minimum = firstPublishedSize(pointers: Self.firstPublishedCallbacks)
    let read = withUnsafeMutableBytes(of: &handler) {
      readHandler(given, minimum: minimum, into: $0)
    }
    guard read else { throw .invalidArgument }
    self.init(handler: handler, context: context)
  }
}
