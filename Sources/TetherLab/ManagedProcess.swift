// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A child process whose stdout lines (and, when asked, its stderr lines) are collected as
/// they come, each with the time it arrived, read from pipes: never from files, whose
/// reading through Foundation (`FileManager.contents(atPath:)`) leaks a buffer for each
/// empty read in this toolchain. Waits are bounded and the process is killed when the
/// object goes away.
public final class ManagedProcess: @unchecked Sendable {
  public struct Line: Sendable {
    public let text: String
    /// The process's own stamp (device lines start with CLOCK_MONOTONIC seconds), plus
    /// ``ManagedProcess/stampOffset``, or the arrival time when the line has none.
    public let time: Double
  }

  /// A line as it came: its own stamp, if it had one, and when it arrived.
  private struct Raw {
    let text: String
    let stamp: Double?
    let arrival: Double
  }

  /// The lines of one of the child's outputs, split as bytes arrive; under the process's
  /// lock.
  private struct Stream {
    var lines: [Raw] = []
    var partial = Data()
    var ended = false

    init(ended: Bool = false) { self.ended = ended }

    mutating func take(_ data: Data, arrival: Double) {
      partial.append(data)
      while let newline = partial.firstIndex(of: 0x0A) {
        let text = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
        partial.removeSubrange(partial.startIndex...newline)
        let stamp = text.split(separator: " ", maxSplits: 1).first.flatMap { Double($0) }
        lines.append(Raw(text: text, stamp: stamp, arrival: arrival))
      }
    }
  }

  private let process = Process()
  private let lock = NSLock()
  /// stdout, then stderr (ended from the start when it is not collected).
  private var streams = [Stream(), Stream(ended: true)]
  public let name: String

  /// Starts `executable`, through `launcher` when given (its first element the program,
  /// the rest its arguments: `qemu-aarch64 -L SYSROOT`, `ip netns exec NAME`). Its stderr
  /// is collected as ``errorLines`` when `collectErrors` is set, discarded otherwise.
  public init(
    name: String, executable: String, arguments: [String], launcher: [String] = [],
    collectErrors: Bool = false
  ) throws {
    self.name = name
    let command = launcher + [executable] + arguments
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.standardOutput = collect(0)
    if collectErrors {
      streams[1].ended = false
      process.standardError = collect(1)
    } else {
      process.standardError = FileHandle.nullDevice
    }
    try process.run()
  }

  deinit { stop() }

  /// Seconds added to each line's own stamp: 0 when the child stamps its lines with this
  /// machine's CLOCK_MONOTONIC; a virtual machine's offset from it when the lines come from a
  /// guest (``GuestDevice``). Applied as the lines are read, to those already in too.
  public var stampOffset: Double {
    get { lock.withLock { offset } }
    set { lock.withLock { offset = newValue } }
  }
  private var offset = 0.0

  /// What the child printed on stdout so far.
  public var lines: [Line] { lock.withLock { streams[0].lines.map(line) } }
  /// What the child printed on stderr so far (empty unless collected).
  public var errorLines: [Line] { lock.withLock { streams[1].lines.map(line) } }

  /// Under the lock.
  private func line(_ raw: Raw) -> Line {
    Line(text: raw.text, time: raw.stamp.map { $0 + offset } ?? raw.arrival)
  }
  public var pid: Int32 { process.processIdentifier }
  public var isRunning: Bool { process.isRunning }

  /// The first line (at or after index `from`) for which `match` holds, waiting up to
  /// `timeout` seconds for it; of stderr when `errors` is set.
  public func waitFor(
    from: Int = 0, errors: Bool = false, timeout: Double, _ match: (String) -> Bool
  ) -> Line? {
    let end = monotonicSeconds() + timeout
    repeat {
      let snapshot = errors ? errorLines : lines
      if from < snapshot.count, let line = snapshot[from...].first(where: { match($0.text) }) {
        return line
      }
      usleep(2000)
    } while monotonicSeconds() < end
    return nil
  }

  /// The first line containing `text`, waiting up to `timeout` seconds.
  public func waitFor(
    _ text: String, from: Int = 0, errors: Bool = false, timeout: Double
  ) -> Line? {
    waitFor(from: from, errors: errors, timeout: timeout) { $0.contains(text) }
  }

  public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits up to `timeout` seconds for the process to exit, then for the end of what it
  /// printed (the pipes deliver the last lines after the exit); its status, or nil.
  public func waitExit(timeout: Double) -> Int32? {
    let end = monotonicSeconds() + timeout
    while process.isRunning && monotonicSeconds() < end { usleep(2000) }
    if process.isRunning { return nil }
    // Returns at once (the process is gone), and releases the run loop source through
    // which Foundation's Process otherwise keeps itself, and its pipe, alive for good.
    process.waitUntilExit()
    // A child's own child may hold the pipes open (a launcher's): then the lines so far.
    while !lock.withLock({ streams.allSatisfy(\.ended) })
      && monotonicSeconds() < end + 1
    {
      usleep(1000)
    }
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

  /// A pipe whose lines go to stream `index` as they come, read by a thread of its own
  /// until the end of file (every write end closed: the child and its children are gone),
  /// where it closes the pipe. Blocking reads, not a FileHandle's readability handler:
  /// the dispatch source behind one misses the end of file now and then (2 pipes in 40 in
  /// a trial here), which left a pipe open and the last lines unknown to be complete.
  private func collect(_ index: Int) -> Pipe {
    let pipe = Pipe()
    let handle = pipe.fileHandleForReading
    Thread { [weak self] in
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let n = buffer.withUnsafeMutableBytes {
          read(handle.fileDescriptor, $0.baseAddress, $0.count)
        }
        if n < 0 && errno == EINTR { continue }
        let arrival = monotonicSeconds()
        guard let self else { break }
        lock.withLock {
          if n > 0 {
            streams[index].take(Data(buffer[0..<n]), arrival: arrival)
          } else {
            streams[index].ended = true
          }
        }
        if n <= 0 { break }
      }
      try? handle.close()
    }.start()
    return pipe
  }
}
