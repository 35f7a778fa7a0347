import TetherCore

/// SplitMix64: a tiny deterministic generator, so every run of a test sees the same
/// cookies, jitter and random event sequences for the same seed.
public struct SeededRandom: RandomNumberGenerator {
  public var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

extension Instant {
  public static func ms(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }
  public static func s(_ s: UInt64) -> Instant { .ms(s * 1000) }
}

extension Interval {
  public static func ms(_ ms: UInt64) -> Interval { .milliseconds(ms) }
}

/// Values the tests use everywhere.
public enum Fixture {
  public static let appID = try! AppID(validating: Array("app-1".utf8))
  public static let channel = try! ChannelName(validating: Array("lobby".utf8))
  public static let token = try! Token(validating: Array("token-A".utf8))
  public static let token2 = try! Token(validating: Array("token-B".utf8))
  public static var config: ChannelConfig { ChannelConfig(appID: appID) }
}
