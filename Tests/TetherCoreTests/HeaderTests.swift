// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherSim

@testable import TetherCore

/// Include/tether.h and the core must agree on every name and number: a test reads the
/// header and compares it with the Swift enums, both ways.
@Suite struct HeaderTests {
  static let header: String = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Include/tether.h")
    return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
  }()

  /// Every `PREFIX<NAME> = <value>` or `#define PREFIX<NAME> <value>` in the header.
  static func constants(prefix: String) -> [String: Int32] {
    var found: [String: Int32] = [:]
    for line in header.split(separator: "\n") {
      let words = line.replacingOccurrences(of: "=", with: " ").replacingOccurrences(
        of: ",", with: " "
      )
      .split(separator: " ").map(String.init)
      guard let index = words.firstIndex(where: { $0.hasPrefix(prefix) }), index + 1 < words.count,
        let value = Int32(words[index + 1])
      else { continue }
      found[String(words[index].dropFirst(prefix.count))] = value
    }
    return found
  }

  @Test func headerIsThere() { #expect(!Self.header.isEmpty) }

  @Test func connectionStates_matchTheHeader() {
    let expected = Dictionary(
      uniqueKeysWithValues: ConnectionState.allCases.map { ("\($0.name)", $0.rawValue) })
    #expect(Self.constants(prefix: "TETHER_CONNECTION_STATE_") == expected)
  }

  @Test func connectionChangedReasons_matchTheHeader() {
    let expected = Dictionary(
      uniqueKeysWithValues: ConnectionChangedReason.allCases.map { ("\($0.name)", $0.rawValue) })
    #expect(Self.constants(prefix: "TETHER_CONNECTION_CHANGED_") == expected)
  }

  @Test func userOfflineReasons_matchTheHeader() {
    let expected = Dictionary(
      uniqueKeysWithValues: UserOfflineReason.allCases.map { ("\($0.name)", $0.rawValue) })
    #expect(Self.constants(prefix: "TETHER_USER_OFFLINE_") == expected)
  }

  @Test func errorCodes_matchTheHeader() {
    var expected = Dictionary(
      uniqueKeysWithValues: TetherError.allCases.map {
        ("\($0.name)".replacingOccurrences(of: "ERR_", with: ""), $0.rawValue)
      })
    expected["OK"] = nil
    #expect(Self.constants(prefix: "TETHER_ERR_") == expected)
    #expect(Self.constants(prefix: "TETHER_").filter { $0.key == "OK" } == ["OK": 0])
  }
}
