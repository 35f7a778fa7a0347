// SPDX-License-Identifier: Apache-2.0
/// The request `Q` an INIT carries sealed under `k_req` (docs/PROTOCOL.md §12.5), 168 bytes
/// whatever the names' lengths: what the device asks for, which the edge compares with the
/// token's grant. Decoded with §8's strictness: every field has one encoding (lengths in
/// range and zero-filled past them, flags only as defined, reserved bytes zero, a resume
/// only with its flag), so a request that opens re-encodes to the same bytes.
///
/// The characters of the names are the edge's to judge (a refusal, sealed): the codec checks
/// only the layout.
public struct HandshakeRequest: Equatable, Sendable {
  /// Flag bit 0: a rejoin (channel) or RELOGIN (login), as version 1's.
  public static var rejoinFlag: UInt8 { 0x01 }
  /// Flag bit 1: the request names a session to resume and proves it.
  public static var resumeFlag: UInt8 { 0x02 }
  /// The grant kinds (§12.4): a channel, or a login user.
  public static var channelKind: UInt8 { 1 }
  public static var loginKind: UInt8 { 2 }
  /// The protocol versions this build speaks, highest first.
  public static var spokenVersions: [UInt8] { [spokenVersion] }
  /// The one version this build speaks (the device writes its list from it).
  static var spokenVersion: UInt8 { 2 }
  public static var size: Int { 168 }

  /// Bits 0 (rejoin) and 1 (resume); the device's handshake sets bit 1 itself.
  public var flags: UInt8
  /// The versions the device speaks, highest first, 1 to 4 of them, none zero.
  public var versions: [UInt8]
  /// The uid asked for (channel; 0: the edge assigns); 0 for a login.
  public var uid: UInt32
  /// The app id, 1 … 64 bytes.
  public var appID: [UInt8]
  /// ``channelKind`` or ``loginKind``.
  public var kind: UInt8
  /// The channel name (1 … 63 bytes) or the user id (1 … 64).
  public var name: [UInt8]
  /// The session to resume (0: none).
  public var resumeSessionID: UInt64
  /// `PRF16(k_resume, h1, "tether2 proof")`, or 16 zeros without a resume.
  public var resumeProof: [UInt8]

  public init(
    flags: UInt8 = 0, versions: [UInt8] = spokenVersions, uid: UInt32 = 0, appID: [UInt8],
    kind: UInt8, name: [UInt8], resumeSessionID: UInt64 = 0,
    resumeProof: [UInt8] = [UInt8](repeating: 0, count: 16)
  ) {
    self.flags = flags
    self.versions = versions
    self.uid = uid
    self.appID = appID
    self.kind = kind
    self.name = name
    self.resumeSessionID = resumeSessionID
    self.resumeProof = resumeProof
  }

  /// The 168 bytes. A field longer than its room is cut to it (the decoder refuses what
  /// that makes); the device builds requests from names already checked by its calls.
  /// Written in place into zeros (the padding and the reserved bytes), field by field.
  public func encoded() -> [UInt8] {
    var out = [UInt8](repeating: 0, count: Self.size)
    out[0] = flags
    put(versions[..<min(versions.count, 4)], into: &out, at: 1)
    putBigEndian(UInt64(uid), width: 4, into: &out, at: 5)
    out[9] = UInt8(truncatingIfNeeded: min(appID.count, 64))
    put(appID[..<min(appID.count, 64)], into: &out, at: 10)
    out[74] = kind
    out[75] = UInt8(truncatingIfNeeded: min(name.count, 64))
    put(name[..<min(name.count, 64)], into: &out, at: 76)
    putBigEndian(resumeSessionID, width: 8, into: &out, at: 140)
    put(resumeProof[..<min(resumeProof.count, 16)], into: &out, at: 148)
    return out
  }

  /// Decodes exactly 168 bytes.
  /// - Throws: ``HandshakeError/malformed`` for any other size or any field out of range.
  public init(decoding bytes: ArraySlice<UInt8>) throws(HandshakeError) {
    guard bytes.count == Self.size else { throw .malformed }
    let b = bytes.startIndex
    let versions = bytes[(b + 1)..<(b + 5)]
    let kind = bytes[b + 74]
    let nameLimit = kind == Self.loginKind ? 64 : 63
    guard let appID = Self.field(bytes, at: b + 9, limit: 64),
      let name = Self.field(bytes, at: b + 75, limit: nameLimit),
      kind == Self.channelKind || kind == Self.loginKind,
      Self.isVersionList(versions)
    else { throw .malformed }
    self.init(
      flags: bytes[b], versions: Array(versions.prefix { $0 != 0 }),
      uid: UInt32(truncatingIfNeeded: bigEndian(bytes, at: b + 5, width: 4)), appID: appID,
      kind: kind, name: name, resumeSessionID: bigEndian(bytes, at: b + 140, width: 8),
      resumeProof: Array(bytes[(b + 148)..<(b + 164)]))
    let resumes = flags & Self.resumeFlag != 0
    guard flags & ~(Self.rejoinFlag | Self.resumeFlag) == 0,
      kind == Self.channelKind || uid == 0,
      resumes == (resumeSessionID != 0),
      resumes || resumeProof.allSatisfy({ $0 == 0 }),
      bytes[(b + 164)...].allSatisfy({ $0 == 0 })
    else { throw .malformed }
  }

  /// Versions, highest first, then zeros: one encoding of each list, and at least one.
  private static func isVersionList(_ bytes: ArraySlice<UInt8>) -> Bool {
    var previous: UInt8 = 0xFF
    var ended = false
    for byte in bytes {
      if byte == 0 {
        ended = true
      } else if ended || byte >= previous {
        return false
      }
      previous = byte
    }
    return bytes.first != 0
  }

  /// A length byte at `index`, 1 … `limit`, then 64 bytes holding that many and zeros.
  private static func field(_ bytes: ArraySlice<UInt8>, at index: Int, limit: Int) -> [UInt8]? {
    let length = Int(bytes[index])
    let value = bytes[(index + 1)..<(index + 1 + min(length, 64))]
    guard length >= 1, length <= limit,
      bytes[(index + 1 + length)..<(index + 65)].allSatisfy({ $0 == 0 })
    else { return nil }
    return Array(value)
  }

}

/// Writes the low `width` bytes of `value` big-endian into `bytes` from `offset`.
@inline(never)
func putBigEndian(_ value: UInt64, width: Int, into bytes: inout [UInt8], at offset: Int) {
  for i in 0..<width {
    bytes[offset + i] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - i)))
  }
}

/// The big-endian unsigned integer of `width` bytes (at most 8) at `index` of `bytes`.
func bigEndian(_ bytes: ArraySlice<UInt8>, at index: Int, width: Int) -> UInt64 {
  var value: UInt64 = 0
  for i in index..<(index + width) { value = value << 8 | UInt64(bytes[i]) }
  return value
}
