// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A failed system call: which one, and its `errno`.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
  public let call: String
  public let errno: Int32

  public init(_ call: String, errno: Int32) {
    self.call = call
    self.errno = errno
  }

  public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}
