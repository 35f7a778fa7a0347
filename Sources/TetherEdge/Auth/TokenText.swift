// SPDX-License-Identifier: Apache-2.0
// The text of a token (TokenSigner.swift): its fields, in decimal and lowercase hex.

/// The fields of a token's text, checked for shape only.
struct ParsedToken {
  var expiry: UInt64
  var mac: [UInt8]

  init?(_ text: [UInt8]) {
    let fields = text.split(separator: 0x3A, omittingEmptySubsequences: false)
    guard fields.count == 3, fields[0].elementsEqual([TokenSigner.version]),
      let expiry = DecimalText.parse(fields[1]), fields[2].count == 2 * TokenSigner.macLength,
      let mac = Hex.decode(fields[2])
    else { return nil }
    self.expiry = expiry
    self.mac = mac
  }
}

/// Canonical unsigned decimal: 1...20 digits, no sign, no leading zero (but "0").
enum DecimalText {
  static func parse(_ digits: ArraySlice<UInt8>) -> UInt64? {
    guard let first = digits.first, digits.count <= 20 else { return nil }
    guard first != 0x30 || digits.count == 1 else { return nil }
    var value: UInt64 = 0
    for byte in digits {
      guard byte >= 0x30, byte <= 0x39 else { return nil }
      let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
      guard !overflow1, !overflow2 else { return nil }
      value = sum
    }
    return value
  }
}

/// Lowercase hexadecimal.
enum Hex {
  private static let digits = Array("0123456789abcdef".utf8)

  static func encode(_ bytes: [UInt8]) -> [UInt8] {
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0x0F)])
    }
    return text
  }

  /// nil unless `text` is an even number of lowercase hex digits.
  static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    guard text.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.count / 2)
    var index = text.startIndex
    while index < text.endIndex {
      guard let high = value(text[index]), let low = value(text[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }

  private static func value(_ digit: UInt8) -> UInt8? {
    switch digit {
    case 0x30...0x39: digit - 0x30
    case 0x61...0x66: digit - 0x61 + 10
    default: nil
    }
  }
}
