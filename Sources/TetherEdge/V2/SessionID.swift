// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// A version 2 session id (docs/PROTOCOL.md §12.8): the edge's epoch (random, nonzero, per
/// start), then a serial (1, 2, … per RESPONSE of that epoch). On the wire: 8 bytes,
/// big-endian, epoch first.
public struct SessionID: Hashable, Sendable, CustomStringConvertible {
  public let epoch: UInt32
  public let serial: UInt32

  public init(epoch: UInt32, serial: UInt32) {
    self.epoch = epoch
    self.serial = serial
  }

  /// The id of 8 wire bytes; nil for another size.
  public init?(bytes: ArraySlice<UInt8>) {
    var reader = ByteReader(bytes)
    guard bytes.count == 8, let epoch = try? reader.u32(), let serial = try? reader.u32() else {
      return nil
    }
    self.init(epoch: epoch, serial: serial)
  }

  /// The id as the 64-bit number the wire carries (epoch in the high half): the session's
  /// key in the edge's table, where version 1's cookie was.
  public init(_ value: UInt64) {
    self.init(
      epoch: UInt32(truncatingIfNeeded: value >> 32), serial: UInt32(truncatingIfNeeded: value))
  }

  /// ``init(_:)``'s number.
  public var value: UInt64 { UInt64(epoch) << 32 | UInt64(serial) }

  /// The 8 wire bytes.
  public var bytes: [UInt8] {
    var out: [UInt8] = []
    out.appendBigEndian(epoch)
    out.appendBigEndian(serial)
    return out
  }

  public var description: String { "\(epoch).\(serial)" }
}
