// SPDX-License-Identifier: Apache-2.0
import CTetherSystem

#if canImport(TetherCore)
  // Absent in the single-module Embedded build (scripts/build/build-lib.sh), present in SwiftPM's.
  import TetherCore
#endif

/// The bytes of a C string, reading at most `limit + 1` bytes (never past a missing NUL
/// further than that): a string longer than `limit` comes back `limit + 1` bytes long, so
/// the caller's length check refuses it.
@inline(never)  // one copy for every string argument
func cStringBytes(_ pointer: UnsafePointer<CChar>, limit: Int) -> [UInt8] {
  let length = strnlen(pointer, limit + 1)
  // One copy through the core's bulk append (`Array(_:)` of the bytes was a specialization
  // of its own): the array is made the string's size. Byte by byte it grew by doubling, 9
  // allocations for a 337-byte token, and kept 512 bytes of room for it (the token is held
  // for the session's life).
  var bytes: [UInt8] = []
  append(UnsafeRawBufferPointer(start: pointer, count: length), to: &bytes)
  return bytes
}

/// A config's `app_id`.
/// - Throws: ``TetherError/invalidAppID`` when it is NULL or malformed.
func appID(_ text: UnsafePointer<CChar>?) throws(TetherError) -> AppID {
  guard let text else { throw .invalidAppID }
  return try AppID(validating: cStringBytes(text, limit: AppID.maximumLength))
}

/// The `channel` argument of both profiles' join and leave.
/// - Throws: ``TetherError/invalidArgument`` when it is NULL,
///   ``TetherError/invalidChannelName`` when it is malformed.
func channelName(_ text: UnsafePointer<CChar>?) throws(TetherError) -> ChannelName {
  guard let text else { throw .invalidArgument }
  return try ChannelName(validating: cStringBytes(text, limit: ChannelName.maximumLength))
}

/// A static C string for the `*_name` functions.
func cString(_ text: StaticString) -> UnsafePointer<CChar> {
  UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Room for the two C strings ``writeCStrings(_:_:into:)`` writes.
let cStringsRoom = Token.maximumLength + 1 + UserID.maximumLength + 1

/// Writes `first` and `second` as two C strings, back to back, into `buffer` (room for
/// ``cStringsRoom``, on the caller's stack: no allocation): the names and tokens the
/// callbacks of both profiles pass. Returns where the second starts. Each is a validated
/// name or token, so neither is ever cut (the limits, `first` at ``Token``'s maximum and
/// `second` at ``UserID``'s, only keep both inside the room whatever they hold).
func writeCStrings(
  _ first: ArraySlice<UInt8>, _ second: ArraySlice<UInt8>,
  into buffer: UnsafeMutableBufferPointer<CChar>
) -> UnsafeMutablePointer<CChar>? {
  guard let base = buffer.baseAddress, buffer.count >= cStringsRoom else { return nil }
  let secondBase = copyCString(first, limit: Token.maximumLength, to: base)
  _ = copyCString(second, limit: UserID.maximumLength, to: secondBase)
  return secondBase
}

/// Copies `bytes` (at most `limit` of them) and a NUL to `destination`; where the next
/// string can go.
private func copyCString(
  _ bytes: ArraySlice<UInt8>, limit: Int, to destination: UnsafeMutablePointer<CChar>
) -> UnsafeMutablePointer<CChar> {
  let count = min(bytes.count, limit)
  bytes.withUnsafeBytes { source in
    if let start = source.baseAddress {
      UnsafeMutableRawPointer(destination).copyMemory(from: start, byteCount: count)
    }
  }
  destination[count] = 0
  return destination + count + 1
}
