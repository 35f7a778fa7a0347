// SPDX-License-Identifier: Apache-2.0
import Glibc
import Logging

/// The edge's log format: one line per record, `TIMESTAMP LEVEL MESSAGE key=value ...`, the
/// timestamp ISO-8601 in UTC with milliseconds, the fields sorted by key, a value quoted
/// when it holds a space, a quote, an `=` or nothing. For example:
///
///     2026-11-23T08:30:00.123Z info join channel=lobby uid=7
///
/// Written with the standard library and libc alone (swift-log's `StreamLogHandler` is not
/// used: the format is the edge's own, and the binary stays free of Foundation).
public struct EdgeLogHandler: LogHandler {
  public var logLevel: Logger.Level
  public var metadata: Logger.Metadata = [:]
  private let sink: LogSink

  /// A handler that writes each line to `sink` (``LogSink/standardError`` by default).
  public init(level: Logger.Level = .info, sink: LogSink = .standardError) {
    self.logLevel = level
    self.sink = sink
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func log(event: LogEvent) {
    var fields = metadata
    if let extra = event.metadata { fields.merge(extra) { $1 } }
    sink.write(
      Self.line(
        time: WallTime.now(), level: event.level, message: "\(event.message)", fields: fields))
  }

  /// One formatted line, without its newline.
  public static func line(
    time: WallTime, level: Logger.Level, message: String, fields: Logger.Metadata
  ) -> String {
    var line = "\(time.iso8601) \(level.rawValue) \(message)"
    for key in fields.keys.sorted() {
      guard let value = fields[key] else { continue }
      line += " \(key)=\(quoted("\(value)"))"
    }
    return line
  }

  /// `text` as is, or in double quotes (with `"` and `\` escaped) when it needs them.
  static func quoted(_ text: String) -> String {
    let plain = !text.isEmpty && !text.utf8.contains { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D }
    if plain { return text }
    var escaped = "\""
    for character in text {
      if character == "\"" || character == "\\" { escaped.append("\\") }
      escaped.append(character)
    }
    return escaped + "\""
  }
}

/// Where an ``EdgeLogHandler`` writes its lines.
public struct LogSink: Sendable {
  public let write: @Sendable (String) -> Void

  public init(write: @escaping @Sendable (String) -> Void) { self.write = write }

  /// Each line with a single `write(2)` to descriptor 2: lines from several threads do not
  /// interleave (a write of this size to a pipe or file is whole).
  public static let standardError = LogSink { line in
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
  }
}

/// A UTC wall-clock time to the millisecond, formatted as ISO-8601 by libc's `gmtime_r`.
public struct WallTime: Equatable, Sendable {
  public var seconds: Int
  public var milliseconds: Int

  public init(seconds: Int, milliseconds: Int) {
    self.seconds = seconds
    self.milliseconds = milliseconds
  }

  public static func now() -> WallTime {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return WallTime(seconds: spec.tv_sec, milliseconds: spec.tv_nsec / 1_000_000)
  }

  /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
  public var iso8601: String {
    var time = time_t(seconds)
    var parts = tm()
    guard gmtime_r(&time, &parts) != nil else { return "\(seconds).\(milliseconds)" }
    return "\(Self.pad(Int(parts.tm_year) + 1900, 4))-\(Self.pad(Int(parts.tm_mon) + 1, 2))"
      + "-\(Self.pad(Int(parts.tm_mday), 2))T\(Self.pad(Int(parts.tm_hour), 2))"
      + ":\(Self.pad(Int(parts.tm_min), 2)):\(Self.pad(Int(parts.tm_sec), 2))"
      + ".\(Self.pad(milliseconds, 3))Z"
  }

  private static func pad(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
  }
}
