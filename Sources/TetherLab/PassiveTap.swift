// SPDX-License-Identifier: Apache-2.0
import Glibc

/// What a passive observer must never read on the wire (docs/SECURITY.md §2, the first
/// line): each secret a test knows, as bytes, in every encoding it could travel in. The tap
/// looks for each in every datagram an ``Attacker`` recorded, both ways.
public struct PassiveTap: Sendable {
  public struct Secret: Sendable {
    public let name: String
    public let bytes: [UInt8]
  }

  public private(set) var secrets: [Secret] = []

  public init() {}

  /// A name as its UTF-8 bytes (an app id, a channel name, a user id, a token's text).
  public mutating func text(_ name: String, _ value: String) {
    secrets.append(Secret(name: name, bytes: Array(value.utf8)))
  }

  /// A uid: its 4 bytes big-endian and little-endian, and its decimal text.
  public mutating func uid(_ uid: UInt32) {
    secrets.append(Secret(name: "uid \(uid) big-endian", bytes: Self.bigEndian(uid)))
    secrets.append(Secret(name: "uid \(uid) little-endian", bytes: Self.bigEndian(uid).reversed()))
    text("uid \(uid) as text", String(uid))
  }

  public mutating func bytes(_ name: String, _ value: [UInt8]) {
    secrets.append(Secret(name: name, bytes: value))
  }

  /// Every (secret, datagram) where the secret's bytes appear in the datagram, as
  /// "NAME in DIRECTION datagram of N bytes (kind K) of device D".
  public func findings(in records: [AttackRecord]) -> [String] {
    var found: [String] = []
    for record in records {
      for secret in secrets where Self.contains(record.bytes, secret.bytes) {
        found.append(
          "\(secret.name) in a \(record.direction) datagram of \(record.bytes.count) bytes "
            + "(kind \(record.kind), \(record.origin)) of device \(record.device)")
      }
    }
    return found
  }

  /// Whether `needle` appears in `haystack`, found with the C library's memchr and memcmp:
  /// the tests run debug builds, where a search through generic slices took 85% of the
  /// attacker suite's CPU.
  static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    haystack.withUnsafeBytes { h in
      needle.withUnsafeBytes { n in
        guard let start = h.baseAddress, let wanted = n.baseAddress, !n.isEmpty, h.count >= n.count
        else {
          return false
        }
        let end = start + (h.count - n.count + 1)
        var at = start
        while at < end, let hit = memchr(at, Int32(n[0]), end - at) {
          if memcmp(hit, wanted, n.count) == 0 { return true }
          at = UnsafeRawPointer(hit) + 1
        }
        return false
      }
    }
  }

  private static func bigEndian(_ value: UInt32) -> [UInt8] {
    [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
  }
}
