// SPDX-License-Identifier: Apache-2.0
/// Why a datagram was not decoded. Every malformed input ends in one of these; decoding
/// never traps. See docs/PROTOCOL.md.
public enum WireError: Error, Equatable, Sendable {
  /// Shorter than its header or than a field it announces.
  case truncated
  /// Longer than ``Packet/maximumSize``.
  case oversized
  /// The first two bytes are not "TH".
  case badMagic
  /// A protocol version this build does not speak.
  case unsupportedVersion(UInt8)
  /// A message type this version does not define.
  case unknownType(UInt8)
  /// A field is out of its range (a length, an enum value, a string's bytes).
  case invalidField
  /// Bytes left over after the message's last field.
  case trailingBytes
}
