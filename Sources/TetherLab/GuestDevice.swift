// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `examples/device` in an ARM virtual machine (`make test-vm-demo`, scripts/test/vm-demo.sh):
/// a boot command whose stdout is the guest's console, live, and the guest's driver
/// (scripts/test/vm-demo-guest.c), which reads its settings from the kernel command line,
/// starts the device and talks to this object over UDP. The guest reaches this machine's
/// loopback as 10.0.2.2 (qemu's user-mode network), and nothing else.
///
/// The host can neither signal a guest process nor read the guest's clock, so the control
/// socket does both: it answers the guest's clock probes with this machine's
/// CLOCK_MONOTONIC (the guest prints its best round: the offset between the clocks, within
/// half its round trip), and ``leave(timeout:)`` tells the guest's driver to SIGINT the
/// device. The device's lines are stamped on the guest's clock; ``process`` adds the
/// offset measured before the device started, so the demo's report counts them on the same
/// timeline as the relay's instants and the host's devices. The guest measures the offset
/// again after the device left: ``finish(timeout:)`` fails if the two disagree.
public final class GuestDevice: ChannelDevice, @unchecked Sendable {
  /// The clocks: the guest's + `offset` = this machine's, within `uncertainty` seconds.
  public struct Clock: Sendable {
    public let offset: Double
    public let uncertainty: Double

    init(offset: Double, uncertainty: Double) {
      self.offset = offset
      self.uncertainty = uncertainty
    }

    /// From a "tether-vm: clock T1 HOST T2" line, nil for any other.
    init?(_ text: String) {
      let words = text.split(separator: " ")
      guard words.count == 5, words[0] == "tether-vm:", words[1] == "clock",
        let t1 = Double(words[2]), let host = Double(words[3]), let t2 = Double(words[4]),
        t2 >= t1
      else { return nil }
      offset = host - (t1 + t2) / 2
      uncertainty = (t2 - t1) / 2
    }
  }

  public let process: ManagedProcess
  /// Measured before the device started.
  public private(set) var clock = Clock(offset: 0, uncertainty: .infinity)
  private let control: Int32
  private let lock = NSLock()
  /// Under `lock`: the guest driver's address (from its probes), whether it said "left".
  private var guest: sockaddr_in?
  private var left = false
  private let worker = LabThread()

  /// Boots the guest (`boot`: the command, its first element the program; it gets the kernel
  /// command-line arguments after its own) whose device joins `channel` as `uid` through
  /// 10.0.2.2:`serverPort`; returns once the guest measured its clock, before the device
  /// starts (within `bootTimeout` seconds). The guest's driver stops by itself after
  /// `limit` seconds.
  public init(
    boot: [String], serverPort: UInt16, appID: String, channel: String, uid: UInt32,
    token: String, scale: Double, limit: Double, bootTimeout: Double = 300
  ) throws {
    control = try Loopback.socket()
    let settings = [
      "control=\(Loopback.port(of: control))", "server=10.0.2.2:\(serverPort)", "app=\(appID)",
      "channel=\(channel)", "uid=\(uid)", "token=\(token)", "scale=\(scale)",
      "limit=\(Int(limit.rounded(.up)))",
    ].map { "tether." + $0 }
    do {
      process = try ManagedProcess(
        name: "guest", executable: boot[0], arguments: Array(boot.dropFirst()) + settings,
        collectErrors: true)
    } catch {
      close(control)
      throw error
    }
    worker.start { [unowned self] in self.answer() }
    let measured = process.waitFor(timeout: bootTimeout) {
      $0.hasPrefix("tether-vm: clock") || $0 == "tether-vm: rc=1 all"
    }
    guard let measured, let clock = Clock(measured.text) else {
      let why =
        measured.map { "it printed '\($0.text)'" }
        ?? (process.isRunning ? "no clock line within \(Int(bootTimeout)) s" : "it stopped")
      process.stop()
      throw LabError("the guest did not measure its clock (\(why)): \(Self.failures(process))")
    }
    self.clock = clock
    process.stampOffset = clock.offset
  }

  deinit {
    process.stop()
    stopControl()
  }

  /// Tells the guest's driver to SIGINT the device (it leaves the channel), repeated every
  /// 50 ms until the driver says it did, for up to `timeout` seconds: 0 then, nil if it never
  /// said so.
  @discardableResult
  public func leave(timeout: Double = 5) -> Int32? {
    let end = monotonicSeconds() + timeout
    while monotonicSeconds() < end {
      let (address, done) = lock.withLock { (guest, left) }
      if done { return 0 }
      if let address { Loopback.send(control, Array("leave".utf8), to: address) }
      usleep(50_000)
    }
    return nil
  }

  /// Waits up to `timeout` seconds for the guest to power off, then checks what it said:
  /// every marker 0 (the boot command's exit status: its verdict) and a second clock line
  /// that agrees with the first. Returns that line's clock.
  @discardableResult
  public func finish(timeout: Double) throws -> Clock {
    let status = process.waitExit(timeout: timeout)
    stopControl()
    guard let status else {
      process.stop()
      throw LabError("the guest did not power off within \(Int(timeout)) s")
    }
    guard status == 0 else {
      throw LabError("the guest's run failed (status \(status)): \(Self.failures(process))")
    }
    let clocks = process.lines.compactMap { Clock($0.text) }
    guard clocks.count == 2, let after = clocks.last else {
      throw LabError("the guest printed \(clocks.count) clock lines, not 2")
    }
    // Both clocks run from the host's (qemu's virtual counter): a difference beyond both
    // measurements' uncertainty (and 1 ms of rounding) means the mapping is not to be trusted.
    let drift = abs(after.offset - clock.offset)
    guard drift <= clock.uncertainty + after.uncertainty + 0.001 else {
      throw LabError(
        String(
          format: "the guest's clock moved %.1f ms against the host's during the run"
            + " (measured within %.1f and %.1f ms)", drift * 1000, clock.uncertainty * 1000,
          after.uncertainty * 1000))
    }
    return after
  }

  /// What the boot command said went wrong (its "FAIL" lines), or its last line.
  private static func failures(_ process: ManagedProcess) -> String {
    let errors = process.errorLines.map(\.text)
    let fails = errors.filter { $0.contains("FAIL") }
    return (fails.isEmpty ? Array(errors.suffix(3)) : fails).joined(separator: "; ")
  }

  private func stopControl() {
    if worker.stop() { close(control) }
  }

  /// The control socket's loop: a clock probe gets this machine's time at once; "left" is
  /// the driver's acknowledgement of ``leave(timeout:)``.
  private func answer() {
    var buffer = [UInt8](repeating: 0, count: 64)
    var fds = [pollfd(fd: control, events: Int16(POLLIN), revents: 0)]
    while worker.isRunning {
      guard poll(&fds, 1, 20) > 0 else { continue }
      while let (n, from) = Loopback.receive(control, into: &buffer) {
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        if text == "clock" {
          let reply = String(format: "clock %.6f", monotonicSeconds())
          Loopback.send(control, Array(reply.utf8), to: from)
        }
        lock.withLock {
          guest = from
          if text == "left" { left = true }
        }
      }
    }
  }
}
