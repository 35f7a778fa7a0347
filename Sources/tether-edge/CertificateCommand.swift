// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import TetherEdge

/// `tether-edge certificate`: prints a strong app certificate, 32 random bytes from
/// libsodium as base64url text (43 characters), for `--app-certificate` and app servers.
struct CertificateCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "certificate",
    abstract: "Print a new, strong app certificate (32 random bytes, base64url).",
    discussion: """
      A certificate is any non-empty text, but one under 32 bytes may be a word someone
      can guess; tether-edge serve warns at start when it is shorter. Keep the certificate
      on the edge and on the app servers that mint tokens, nowhere else.
      """)

  func run() throws {
    print(Self.base64url(CertificateKeys.generate()))
  }

  /// RFC 4648 §5 without padding.
  static func base64url(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var out: [Character] = []
    var i = 0
    while i < bytes.count {
      let n = min(3, bytes.count - i)
      var word = UInt32(bytes[i]) << 16
      if n > 1 { word |= UInt32(bytes[i + 1]) << 8 }
      if n > 2 { word |= UInt32(bytes[i + 2]) }
      for k in 0...n { out.append(alphabet[Int(word >> UInt32(18 - 6 * k) & 63)]) }
      i += 3
    }
    return String(out)
  }
}
