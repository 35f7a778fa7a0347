// SPDX-License-Identifier: Apache-2.0
/// Which way a datagram goes through the ``FaultProxy``.
public enum FaultDirection: Int, Sendable, CaseIterable, CustomStringConvertible {
  /// Device → edge.
  case uplink = 0
  /// Edge → device.
  case downlink = 1

  public var description: String { self == .uplink ? "uplink" : "downlink" }
}

/// What the ``FaultProxy`` does to the datagrams of one direction of one device's link, as
/// netem would on an interface. Every random choice is a draw from ``FaultDice``, so a seed
/// replays the same faults on the same datagrams.
public struct FaultProfile: Sendable, Equatable {
  /// Each datagram is dropped with this probability.
  public var loss = 0.0
  /// Each datagram that passes is sent twice with this probability, the copy
  /// ``duplicateLag`` seconds after the original.
  public var duplicate = 0.0
  public var duplicateLag = 0.0
  /// Every datagram is held this many seconds (a delay spike while it is set).
  public var delay = 0.0
  /// Each datagram is held ``reorderHold`` seconds with this probability, so that the
  /// ones after it overtake it.
  public var reorder = 0.0
  public var reorderHold = 0.0
  /// Nothing passes.
  public var blackhole = false

  public init() {}

  /// No fault: every datagram passes at once.
  public static let clean = FaultProfile()

  /// Nothing passes.
  public static var blackholed: FaultProfile {
    var profile = FaultProfile()
    profile.blackhole = true
    return profile
  }

  public static func loss(_ probability: Double) -> FaultProfile {
    var profile = FaultProfile()
    profile.loss = probability
    return profile
  }

  public static func delay(_ seconds: Double) -> FaultProfile {
    var profile = FaultProfile()
    profile.delay = seconds
    return profile
  }

  public static func duplicate(_ probability: Double, lag: Double = 0) -> FaultProfile {
    var profile = FaultProfile()
    profile.duplicate = probability
    profile.duplicateLag = lag
    return profile
  }

  public static func reorder(_ probability: Double, hold: Double) -> FaultProfile {
    var profile = FaultProfile()
    profile.reorder = probability
    profile.reorderHold = hold
    return profile
  }
}

/// Stateless seeded draws: the same (seed, device, direction, message type, index, purpose)
/// always gives the same number in [0, 1), whatever order datagrams arrive in. The index of
/// a HEARTBEAT and of its HEARTBEAT_ACK is the heartbeat's sequence, so a seed drops the
/// same beats and the same answers in every run; other types are counted per type.
public struct FaultDice: Sendable {
  public enum Purpose: UInt64, Sendable {
    case loss = 1
    case duplicate, reorder
  }

  public let seed: UInt64

  public init(seed: UInt64) { self.seed = seed }

  public func draw(
    device: Int, direction: FaultDirection, type: UInt8, index: UInt64, purpose: Purpose
  ) -> Double {
    var x = Self.mix(seed ^ 0x5445_5448_4552_4C41)
    x = Self.mix(x ^ UInt64(truncatingIfNeeded: device))
    x = Self.mix(x ^ UInt64(direction.rawValue) << 8 ^ UInt64(type) << 16 ^ purpose.rawValue << 32)
    x = Self.mix(x ^ index)
    return Double(x >> 11) / Double(UInt64(1) << 53)
  }

  /// SplitMix64's finaliser: a bijection that spreads every input bit.
  static func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
