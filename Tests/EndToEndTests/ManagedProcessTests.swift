// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TetherLab

/// The lab's child processes give back what they hold once stopped: the fault runs and
/// `make soak` start hundreds of devices and servers in one test process.
@Suite struct ManagedProcessTests {
  private static func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
  }

  /// 300 processes started, read to the end and stopped: the descriptors open afterwards
  /// are about as many as before (other suites running at the same time open some too, so
  /// the bound is loose; one kept per process would be 300 more; before the fix, two were).
  @Test func stoppedProcesses_leaveNoDescriptorBehind() throws {
    let count = 300
    let before = Self.openDescriptors()
    for index in 0..<count {
      let process = try ManagedProcess(
        name: "echo", executable: "/bin/echo", arguments: ["line \(index)"])
      #expect(process.waitFor("line \(index)", timeout: 10) != nil)
      #expect(process.waitExit(timeout: 10) == 0)
      process.stop()
    }
    let after = Self.openDescriptors()
    #expect(
      after - before < count / 3, "\(after - before) more descriptors open after \(count) processes"
    )
  }
}
