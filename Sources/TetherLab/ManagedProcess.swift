import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A child process whose stdout lines are collected as they come, each with the time it
/// arrived; waits are bounded and the process is killed when the object goes away.
public final class ManagedProcess: @unchecked Sendable {
  public struct Line: Sendable {
    public let text: String
    /// The process's own stamp (device lines start with CLOCK_MONOTONIC seconds), or
    /// the arrival time when the line has none.
    public let time: Double
  }

  private let process = Process()
  private let lock = NSLock()
  private var collected: [Line] = []
  private var partial = Data()
  public let name: String

  /// Starts `executable`, through `launcher` when given (its first element the program,
  /// the rest its arguments: `qemu-aarch64 -L SYSROOT`, `ip netns exec NAME`).
  public init(
    name: String, executable: String, arguments: [String], launcher: [String] = []
  ) throws {
    self.name = name
    let command = launcher + [executable] + arguments
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
      let data = handle.availableData
      // End of file: the child is gone (Process closed our copy of the write end). The
      // handler and the FileHandle's dispatch source hold each other until it is removed,
      // and the pipe's descriptor with them.
      if data.isEmpty { handle.readabilityHandler = nil }
      self?.take(data)
    }
    try process.run()
  }

  deinit { stop() }

  public var lines: [Line] { lock.withLock { collected } }
  public var pid: Int32 { process.processIdentifier }
  public var isRunning: Bool { process.isRunning }

  /// The first line (at or after index `from`) for which `match` holds, waiting up to
  /// `timeout` seconds for it.
  public func waitFor(
    from: Int = 0, timeout: Double, _ match: (String) -> Bool
  ) -> Line? {
    let end = monotonicSeconds() + timeout
    repeat {
      let snapshot = lines
      if from < snapshot.count, let line = snapshot[from...].first(where: { match($0.text) }) {
        return line
      }
      usleep(2000)
    } while monotonicSeconds() < end
    return nil
  }

  /// The first line containing `text`, waiting up to `timeout` seconds.
  public func waitFor(_ text: String, from: Int = 0, timeout: Double) -> Line? {
    waitFor(from: from, timeout: timeout) { $0.contains(text) }
  }

  public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits up to `timeout` seconds for the process to exit; its status, or nil.
  public func waitExit(timeout: Double) -> Int32? {
    let end = monotonicSeconds() + timeout
    while process.isRunning && monotonicSeconds() < end { usleep(2000) }
    if process.isRunning { return nil }
    // Returns at once (the process is gone), and releases the run loop source through
    // which Foundation's Process otherwise keeps itself, and its pipe, alive for good.
    process.waitUntilExit()
    return process.terminationStatus
  }

  public func stop() {
    if process.isRunning {
      process.terminate()
      if waitExit(timeout: 2) == nil {
        kill(process.processIdentifier, SIGKILL)
        _ = waitExit(timeout: 2)
      }
    } else if process.processIdentifier > 0 {
      _ = waitExit(timeout: 0)
    }
  }

  private func take(_ data: Data) {
    guard !data.isEmpty else { return }
    let arrival = monotonicSeconds()
    lock.withLock {
      partial.append(data)
      while let newline = partial.firstIndex(of: 0x0A) {
        let text = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
        partial.removeSubrange(partial.startIndex...newline)
        let stamp = text.split(separator: " ", maxSplits: 1).first.flatMap { Double($0) }
        collected.append(Line(text: text, time: stamp ?? arrival))
      }
    }
  }
}
