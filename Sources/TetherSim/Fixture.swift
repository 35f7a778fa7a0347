// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// Values the tests use everywhere.
public enum Fixture {
  public static let appID = try! AppID(validating: Array("app-1".utf8))
  public static let channel = try! ChannelName(validating: Array("lobby".utf8))
  public static let token = try! Token(validating: Array("token-A".utf8))
  public static let token2 = try! Token(validating: Array("token-B".utf8))
  public static var config: ChannelConfig { ChannelConfig(appID: appID) }
}
