// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Tether

/// The number after an on_log text: " <decimal>", built from bytes (the Embedded library has
/// no string formatting).
@Suite struct LogLineTests {
  static func decimal(_ number: Int64) -> String {
    var line = Array("errno".utf8)
    appendDecimal(number, to: &line)
    return String(decoding: line, as: UTF8.self)
  }

  @Test(arguments: [
    (Int64(0), "errno 0"), (7, "errno 7"), (10, "errno 10"), (99, "errno 99"), (100, "errno 100"),
    (1_234_567, "errno 1234567"), (-1, "errno -1"), (-10, "errno -10"),
    (Int64.max, "errno 9223372036854775807"), (Int64.min, "errno -9223372036854775808"),
  ])
  func appendDecimal_writesEveryDigit_highestFirst(number: Int64, expected: String) {
    #expect(Self.decimal(number) == expected)
  }
}
