// SPDX-License-Identifier: Apache-2.0
import CTetherABI
import Testing
import TetherCore

@testable import Tether

/// One error space: what a function returns is a TETHER_ERR_* code that tether_error_name
/// names, whichever profile returns it; the login results stay what callbacks report.
@Suite struct ErrorSpaceTests {
  /// The session throws these itself (LoginSessionTests); here, their values are tether.h's.
  @Test func everyLoginRefusal_theSessionMakes_isAReturnCodeOfItsOwn() {
    #expect(TetherError.tooOften.rawValue == TETHER_ERR_TOO_OFTEN)
    #expect(TetherError.alreadyLoggedIn.rawValue == TETHER_ERR_ALREADY_LOGGED_IN)
    #expect(TetherError.notLoggedIn.rawValue == TETHER_ERR_NOT_LOGGED_IN)
  }

  @Test func noReturnCode_sharesItsValue_andEveryOneIsNamed() {
    let values = TetherError.allCases.map(\.rawValue)
    #expect(Set(values).count == values.count)
    for error in TetherError.allCases {
      let name = String(cString: errorName(error.rawValue))
      #expect(name == "\(error.name)" && name.hasPrefix("ERR_"))
    }
    #expect(String(cString: errorName(0)) == "OK")
    #expect(String(cString: errorName(-4)) == "UNKNOWN")
  }
}

/// A handler as a connection keeps it: read up to the size the app declared, the rest NULL,
/// `size` this build's; refused below the first published size.
@Suite struct HandlerReadingTests {
  static let minimum = 16

  static func read(_ given: [UInt8]?) -> (Bool, [UInt8]) {
    var kept = [UInt8](repeating: 0xAA, count: 40)
    let read = kept.withUnsafeMutableBytes { destination in
      guard let given else { return readHandler(nil, minimum: minimum, into: destination) }
      return given.withUnsafeBytes {
        readHandler($0.baseAddress, minimum: minimum, into: destination)
      }
    }
    return (read, kept)
  }

  /// A handler of `declared` bytes whose size field says so, every other byte `fill`.
  static func handler(declared: UInt32, fill: UInt8) -> [UInt8] {
    var bytes = [UInt8](repeating: fill, count: Int(declared))
    withUnsafeBytes(of: declared.littleEndian) { bytes.replaceSubrange(0..<4, with: $0) }
    return bytes
  }

  @Test func null_givesEveryCallbackNull_andThisBuildsSize() {
    let (read, kept) = Self.read(nil)
    #expect(read)
    #expect(kept[0..<4].elementsEqual(withUnsafeBytes(of: UInt32(40).littleEndian) { Array($0) }))
    #expect(kept[4...].allSatisfy { $0 == 0 })
  }

  @Test func anOlderShorterHandler_isReadUpToItsSize_theRestNull() {
    let (read, kept) = Self.read(Self.handler(declared: 24, fill: 0x11))
    #expect(read)
    #expect(kept[4..<24].allSatisfy { $0 == 0x11 })
    #expect(kept[24...].allSatisfy { $0 == 0 })
    #expect(kept[0..<4].elementsEqual(withUnsafeBytes(of: UInt32(40).littleEndian) { Array($0) }))
  }

  @Test func aHandlerBelowTheFirstPublishedSize_isRefused() {
    #expect(!Self.read(Self.handler(declared: 8, fill: 0x11)).0)
  }
}
