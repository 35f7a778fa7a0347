import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The app's login handler, copied at create (up to the size the app declared; the rest
/// NULL), and its context pointer. Each method calls one C callback if the app set it.
struct RtmCallbacks: NotificationSink {
  var handler = tether_rtm_handler()
  let context: UnsafeMutableRawPointer?

  /// The size of the first published handler: `size` and the six callbacks of the
  /// contract, up to `on_member_left`.
  static let minimumSize = MemoryLayout<
    (
      UInt32, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?,
      UnsafeRawPointer?, UnsafeRawPointer?
    )
  >.size

  /// Nil when `given` declares a size below ``minimumSize`` (the app forgot
  /// `tether_rtm_handler_init`).
  init?(_ given: UnsafePointer<tether_rtm_handler>?, context: UnsafeMutableRawPointer?) {
    self.context = context
    handler.size = UInt32(MemoryLayout<tether_rtm_handler>.size)
    guard let given else { return }
    guard let read = readSized(given, minimum: Self.minimumSize, defaults: handler) else {
      return nil
    }
    handler = read
    handler.size = UInt32(MemoryLayout<tether_rtm_handler>.size)
  }

  /// The app's on_log.
  var logger: Logger { Logger(callback: handler.on_log, context: context) }

  func deliver(_ notification: LoginNotification, from connection: Connection) {
    switch notification {
    case .connectionStateChanged(let state, let reason):
      handler.on_connection_state_changed?(
        context, tether_rtm_connection_state(UInt32(bitPattern: state.rawValue)),
        tether_rtm_connection_change_reason(UInt32(bitPattern: reason.rawValue)))
    case .loginResult(let error):
      handler.on_login_result?(context, error.rawValue)
    case .logoutResult(let error):
      handler.on_logout_result?(context, error.rawValue)
    case .tokenExpired:
      handler.on_token_expired?(context)
    case .memberJoined(let channel, let user):
      guard let callback = handler.on_member_joined else { return }
      Self.withCStrings(channel, user) { callback(context, $0, $1) }
    case .memberLeft(let channel, let user):
      guard let callback = handler.on_member_left else { return }
      Self.withCStrings(channel, user) { callback(context, $0, $1) }
    case .loginAttempt(let attempt, let nextAttemptAt):
      connection.attempted(attempt)
      guard !connection.destroyed else { return }
      let inMs = nextAttemptAt.since(connection.now).clampedMilliseconds
      handler.on_login_attempt?(context, attempt, inMs)
    }
  }

  /// `first` and `second` as two C strings, back to back in a buffer on the stack (each is
  /// a validated name of at most 64 bytes; longer ones are cut, which cannot happen).
  private static func withCStrings(
    _ first: ArraySlice<UInt8>, _ second: ArraySlice<UInt8>,
    _ body: (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Void
  ) {
    let room = 2 * (UserID.maximumLength + 1)
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: room) { buffer in
      guard let base = buffer.baseAddress else { return }
      let firstCount = min(first.count, UserID.maximumLength)
      let secondCount = min(second.count, UserID.maximumLength)
      for (index, byte) in first.prefix(firstCount).enumerated() {
        base[index] = CChar(bitPattern: byte)
      }
      base[firstCount] = 0
      let secondBase = base + firstCount + 1
      for (index, byte) in second.prefix(secondCount).enumerated() {
        secondBase[index] = CChar(bitPattern: byte)
      }
      secondBase[secondCount] = 0
      body(base, secondBase)
    }
  }
}
