import CTetherABI

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The app's handler, copied at create (up to the size the app declared; the rest NULL),
/// and its context pointer. Each method calls one C callback if the app set it.
struct Callbacks {
  var handler = tether_engine_handler()
  let context: UnsafeMutableRawPointer?

  /// The size of the first published handler: `size` and the nine callbacks of the
  /// contract, up to `on_request_token`. A handler declaring less was not initialised.
  static let minimumSize = MemoryLayout<
    (
      UInt32, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?,
      UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?,
      UnsafeRawPointer?
    )
  >.size

  /// Nil when `given` declares a size below ``minimumSize`` (the app forgot
  /// `tether_engine_handler_init`): its callbacks would never be called.
  init?(_ given: UnsafePointer<tether_engine_handler>?, context: UnsafeMutableRawPointer?) {
    self.context = context
    handler.size = UInt32(MemoryLayout<tether_engine_handler>.size)
    guard let given else { return }
    let declared = Int(given.pointee.size)
    guard declared >= Self.minimumSize else { return nil }
    let count = min(declared, MemoryLayout<tether_engine_handler>.size)
    withUnsafeMutableBytes(of: &handler) { dst in
      dst.copyMemory(from: UnsafeRawBufferPointer(start: given, count: count))
    }
    handler.size = UInt32(MemoryLayout<tether_engine_handler>.size)
  }

  func deliver(_ notification: ChannelNotification) {
    switch notification {
    case .connectionStateChanged(let state, let reason):
      handler.on_connection_state_changed?(
        context, tether_connection_state(UInt32(bitPattern: state.rawValue)),
        tether_connection_changed_reason(UInt32(bitPattern: reason.rawValue)))
    case .connectionLost:
      handler.on_connection_lost?(context)
    case .leaveChannel:
      handler.on_leave_channel?(context)
    case .userJoined(let uid, let elapsed):
      handler.on_user_joined?(context, uid, elapsed)
    case .userOffline(let uid, let reason):
      handler.on_user_offline?(
        context, uid, tether_user_offline_reason(UInt32(bitPattern: reason.rawValue)))
    case .remoteMemberInterrupted(let uid):
      handler.on_remote_member_interrupted?(context, uid)
    case .remoteMemberResumed(let uid):
      handler.on_remote_member_resumed?(context, uid)
    case .tokenPrivilegeWillExpire(let token):
      var text = token.bytes
      text.append(0)
      text.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) {
          handler.on_token_privilege_will_expire?(context, $0.baseAddress)
        }
      }
    case .requestToken:
      handler.on_request_token?(context)
    case .joinChannelSuccess, .rejoinChannelSuccess, .joinAttempt:
      break  // need the engine's state: Engine.deliver handles them
    }
  }

  func joinSuccess(_ channel: [UInt8], _ uid: UInt32, _ elapsed: UInt32, rejoin: Bool) {
    guard
      let callback = rejoin ? handler.on_rejoin_channel_success : handler.on_join_channel_success
    else { return }
    channel.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { callback(context, $0.baseAddress, uid, elapsed) }
    }
  }

  func joinAttempt(_ attempt: UInt32, _ nextInMs: UInt32, _ giveUpInMs: UInt32) {
    handler.on_join_attempt?(context, attempt, nextInMs, giveUpInMs)
  }

  /// Sends `text`, then `number` in decimal if given, to the app's on_log. Built from
  /// bytes, not String: the Embedded library carries no string formatting.
  func log(_ level: LogLevel, _ text: StaticString, _ number: Int64? = nil) {
    guard let callback = handler.on_log else { return }
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
