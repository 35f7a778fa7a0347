// SPDX-License-Identifier: Apache-2.0
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One datagram an ``Attacker`` saw on a device's link or on one of its own sockets, or sent.
public struct AttackRecord: Sendable {
  public enum Origin: Sendable, Equatable {
    /// A genuine datagram on the device's link, as the proxy received it.
    case genuine
    /// One the attacker sent on the device's link (from the device's own address, or to
    /// the device from the edge's).
    case injected
    /// Sent from (uplink) or received on (downlink) the attacker's socket of this index.
    case socket(Int)
    /// A flipped copy of a moved datagram, sent from the attacker's socket of this index:
    /// not counted as bytes the edge received there (``Attacker/excess(socket:until:)``),
    /// since the edge's budget for an address counts only datagrams that opened.
    case flippedFrom(Int)
  }

  public let time: Double
  public let device: Int
  public let direction: FaultDirection
  public let bytes: [UInt8]
  public let origin: Origin

  /// The version 2 kind (docs/PROTOCOL.md §12.2): byte 0.
  public var kind: UInt8 { bytes.first ?? 0 }
}

/// An attacker on the path between the devices and the edge, in the ``FaultProxy``
/// (docs/SECURITY.md §2, the on-path and off-path attackers): it sees every datagram before
/// the proxy's faults (a passive tap: ``records``), and, as a test arms it, flips bits,
/// drops, replays, forges, and sends from sockets of its own (another source address, as a
/// spoofer or a NAT that moved the device's port). It builds no cryptography: what it sends
/// is what it saw, altered, or bytes it made up; a token holder's INITs come from the tests,
/// made with the project's own handshake types.
///
/// The edge's answers to the attacker's own sockets are counted per socket (bytes in and
/// out, in order), so a test can check that the edge never sent an address it had not
/// validated more than it received from it (``excess(socket:until:)``).
public final class Attacker: @unchecked Sendable {
  /// How a bit-flipped datagram is sent: beside the genuine one (before it), or in its
  /// place (the genuine one is dropped: the protocol must recover as from a loss).
  public enum Flip: Sendable { case inAddition, instead }

  /// One datagram the attacker flipped (its copies sent), when, and which way.
  public struct FlipRecord: Sendable {
    public let time: Double
    public let direction: FaultDirection
    public let kind: UInt8
    public let size: Int
    /// Which datagram of its shape since the flips were armed (0: the first).
    public let ordinal: Int
  }

  /// What the attacker does on one device's link; under `lock`.
  private struct Policy {
    var flip: Flip?
    /// The shapes (direction, kind, DATA's size) flipped so far.
    var flipped: Set<Int> = []
    /// How many datagrams of each shape the link carried since the flips were armed.
    var seen: [Int: Int] = [:]
    /// Of each shape, datagrams `flipSkip ..< flipSkip + flipTimes` are flipped.
    var flipSkip = 0
    var flipTimes = 1
    /// The DATA sizes flipped (nil: all); other kinds are not filtered by size.
    var flipSizes: Set<Int>?
    var flipLog: [FlipRecord] = []
    /// When set, an uplink datagram is flipped only this soon after a datagram a relaying
    /// socket delivered (the device's answer to it: a PATH_RESPONSE).
    var flipAnswersWithin: Double?
    var lastRelayed = -Double.infinity
    var replayAfter: [Double] = []
    /// Every uplink datagram also sent from this socket (moved copies).
    var copyTo: Int?
    /// Every uplink datagram sent from this socket instead (a NAT rebinding).
    var moveTo: Int?
    /// INITs still to drop (so the device stays CONNECTING and retries).
    var dropInits = 0
    /// Forgeries sent to the device at each of its INITs.
    var forgeAtInit = false
    var forgedAtInits = 0
    var spareToken = true
    /// The kinds flipped (nil: all).
    var flipKinds: Set<UInt8>?
    /// The next INIT is answered with a REFUSE_CLEAR echoing its nonce (the exception).
    var refuseNextInit = false
  }

  /// One of the attacker's sockets, connected to the edge; under `lock`.
  private struct Socket {
    let fd: Int32
    let device: Int
    /// Whether what the edge sends it goes on to the device (a NAT's new port).
    let relays: Bool
  }

  private struct Scheduled {
    let due: Double
    let device: Int
    let direction: FaultDirection
    let bytes: [UInt8]
  }

  public let proxy: FaultProxy
  private let lock = NSLock()
  private var policies: [Policy]
  private var sockets: [Socket] = []
  private var log: [AttackRecord] = []
  private var scheduled: [Scheduled] = []
  private var random: UInt64
  private let worker = LabThread()

  /// An attacker on every link of `proxy` (`devices` of them, to the edge at
  /// 127.0.0.1:`edgePort`), passive until armed; `seed` makes its garbage.
  public init(proxy: FaultProxy, edgePort: UInt16, devices: Int, seed: UInt64) {
    self.proxy = proxy
    self.edgePort = edgePort
    policies = Array(repeating: Policy(), count: devices)
    random = seed
    proxy.intercept { [weak self] device, direction, bytes in
      self?.intercept(device: device, direction: direction, bytes: bytes) ?? true
    }
    worker.start { [weak self] in
      while let self, self.worker.isRunning { self.turn() }
    }
  }

  deinit { stop() }

  /// Ends the thread and closes the attacker's sockets; once.
  public func stop() {
    guard worker.stop() else { return }
    for socket in locked({ sockets }) { close(socket.fd) }
  }

  // MARK: - What it saw

  /// Everything so far: the genuine datagrams of every link, what the attacker sent, and
  /// its sockets' traffic both ways.
  public var records: [AttackRecord] { locked { log } }

  /// The genuine datagrams of device `i`'s link so far.
  public func genuine(_ device: Int) -> [AttackRecord] {
    records.filter { $0.device == device && $0.origin == .genuine }
  }

  /// The shapes flipped so far on device `i`'s link: (direction, kind, size).
  public func flippedShapes(_ device: Int) -> [(FaultDirection, UInt8, Int)] {
    locked {
      policies[device].flipped.sorted().map {
        (FaultDirection(rawValue: $0 >> 24) ?? .uplink, UInt8($0 >> 16 & 0xFF), $0 & 0xFFFF)
      }
    }
  }

  /// How many datagrams the attacker sent on links or from its sockets.
  public var sent: Int {
    records.filter { $0.origin == .injected || ($0.direction == .uplink && $0.origin != .genuine) }
      .count
  }

  // MARK: - Arming

  /// From now on, the first datagram of each shape (direction, kind, and a DATA's size) on
  /// device `i`'s link is flipped at every offset, one bit a copy (bit `offset % 8`), and the
  /// copies sent before it (``Flip/inAddition``) or in its place (``Flip/instead``). Nil
  /// stops. With `skip` and `times`, datagrams `skip ..< skip + times` of each DATA shape
  /// (counted from now) instead of the first: a later one, a repeat; of the other kinds
  /// (handshakes, refusals, RESET: the next join's), the first `times` from now. With
  /// `answersWithin`, an uplink datagram only that many seconds after the edge's datagram
  /// reached the device from a relaying socket (the device's answer to a PATH_CHALLENGE). Datagrams the edge
  /// sends a relaying socket (``rebind(device:)``) are flipped as the link's, and so are
  /// the device's moved datagrams, whose copies leave from the new socket.
  ///
  /// With `spareToken` (the default) an INIT's copies leave its token (`W`, bytes
  /// 50 ..< 269) alone: the edge answers a `W` it cannot open with REFUSE_CLEAR, which
  /// echoes the nonce in clear, unaltered by such a flip, so the device takes it and ends
  /// its join as an invalid token. That is the on-path attacker's one documented power
  /// (docs/SECURITY.md: a REFUSE_CLEAR for an INIT it saw), shown apart.
  /// `kinds`: only datagrams of these kinds (byte 0) are flipped; nil, every kind. `sizes`:
  /// only DATA datagrams of these sizes (a notice's size names it, docs/PROTOCOL.md §12.7).
  public func flip(
    _ mode: Flip?, device: Int, spareToken: Bool = true, kinds: Set<UInt8>? = nil,
    sizes: Set<Int>? = nil, skip: Int = 0, times: Int = 1, answersWithin: Double? = nil
  ) {
    locked {
      policies[device].flip = mode
      policies[device].spareToken = spareToken
      policies[device].flipKinds = kinds
      policies[device].flipSizes = sizes
      policies[device].flipSkip = skip
      policies[device].flipTimes = times
      policies[device].flipAnswersWithin = answersWithin
      policies[device].seen = [:]
    }
  }

  /// Every datagram of device `i`'s link flipped so far, in order.
  public func flips(_ device: Int) -> [FlipRecord] { locked { policies[device].flipLog } }

  /// Where an INIT carries the token's public header and sealed part (docs/PROTOCOL.md
  /// §12.5).
  public static let initToken = 50..<269

  /// From now on, every genuine datagram of device `i`'s link, both ways, is sent again on
  /// the same link (from the device's address, or to the device from the edge's) after
  /// each of `delays` seconds.
  public func replay(device: Int, after delays: [Double]) {
    locked { policies[device].replayAfter = delays }
  }

  /// Forgets every timed replay not yet sent.
  public func cancelReplays() { locked { scheduled.removeAll() } }

  /// Sends `records` again on their own links, in order, `spacing` seconds apart (a replay
  /// after a leave, a rejoin, a renewal, an edge restart); returns when all went.
  public func resend(_ records: [AttackRecord], spacing: Double = 0.001) {
    for record in records {
      proxy.inject(record.bytes, device: record.device, record.direction)
      note(record.bytes, device: record.device, record.direction, .injected)
      if spacing > 0 { Thread.sleep(forTimeInterval: spacing) }
    }
  }

  /// Sends `bytes` on device `i`'s link: to the edge from the device's address, or to the
  /// device from the edge's.
  public func inject(_ bytes: [UInt8], device: Int, _ direction: FaultDirection) {
    proxy.inject(bytes, device: device, direction)
    note(bytes, device: device, direction, .injected)
  }

  /// The next `count` INITs of device `i` are dropped (it stays CONNECTING and retries).
  public func dropInits(_ count: Int, device: Int) { locked { policies[device].dropInits = count } }

  /// At each INIT of device `i` (dropped or not), the attacker sends the device forged
  /// answers and notices (``forgeries(nonce:)``) before anything else can answer.
  public func forgeAtEachInit(_ on: Bool, device: Int) {
    locked { policies[device].forgeAtInit = on }
  }

  /// The next INIT of device `i` is answered, before the edge can answer it, with a
  /// REFUSE_CLEAR that echoes its nonce: what an on-path attacker can forge
  /// (docs/SECURITY.md, the documented exception; REFUSE_CLEAR cannot be sealed).
  public func refuseNextInitInClear(device: Int) {
    locked { policies[device].refuseNextInit = true }
  }

  /// How many INITs of device `i` the forgeries answered.
  public func forgedAtInits(_ device: Int) -> Int { locked { policies[device].forgedAtInits } }

  /// A new socket of the attacker's, connected to the edge, for device `i`'s traffic
  /// (another source address on loopback: another port); `relays`: what the edge sends it
  /// goes on to the device. Its index.
  public func openSocket(device: Int, relays: Bool = false) throws -> Int {
    let fd = try Loopback.socket(peer: edgePort)
    return locked {
      sockets.append(Socket(fd: fd, device: device, relays: relays))
      return sockets.count - 1
    }
  }

  /// The edge's port, where the attacker's sockets send.
  public let edgePort: UInt16

  /// Sends `bytes` to the edge from the attacker's socket `index`.
  public func send(_ bytes: [UInt8], fromSocket index: Int) {
    let socket = locked { sockets[index] }
    // Noted before it goes: the edge's answer may arrive before sendto returns here.
    note(bytes, device: socket.device, .uplink, .socket(index))
    Loopback.send(socket.fd, bytes)
  }

  /// From now on, every uplink datagram of device `i` is also sent from socket `index`
  /// (nil stops): the device's datagrams moved to another source address.
  public func copyUplink(device: Int, toSocket index: Int?) {
    locked { policies[device].copyTo = index }
  }

  /// A NAT rebinding: from now on device `i`'s uplink leaves from a new socket (another
  /// source port) instead of the proxy's, and what the edge sends that socket reaches the
  /// device. What the edge still sends the old port reaches it too. The new socket's index.
  public func rebind(device: Int) throws -> Int {
    let index = try openSocket(device: device, relays: true)
    locked { policies[device].moveTo = index }
    return index
  }

  // MARK: - Accounting

  /// Socket `index`'s traffic: (time, bytes) to the edge and from it.
  public func traffic(socket index: Int) -> (toEdge: [(Double, Int)], fromEdge: [(Double, Int)]) {
    let mine = records.filter { $0.origin == .socket(index) }
    return (
      mine.filter { $0.direction == .uplink }.map { ($0.time, $0.bytes.count) },
      mine.filter { $0.direction == .downlink }.map { ($0.time, $0.bytes.count) }
    )
  }

  /// The most the edge had sent socket `index` beyond what it had received from it, at
  /// any moment up to `until` (0 or less: never more out than in). A datagram from the
  /// edge counts at its arrival, after every datagram sent before it. Flipped copies sent
  /// from the socket count as bytes in (the edge received them), unless `sessionOnly`:
  /// then only what a session's budget for an unvalidated address counts
  /// (docs/PROTOCOL.md §12.11): no flipped copy in (none opens), and no RESET out (the
  /// edge's answer to a copy whose session id a flip changed, 25 bytes for 42 or more).
  public func excess(socket index: Int, until: Double = .infinity, sessionOnly: Bool = false)
    -> Int
  {
    var balance = 0
    var worst = Int.min
    let mine = records.enumerated().filter { entry in
      let record = entry.element
      if sessionOnly { return record.origin == .socket(index) && record.kind != 0x08 }
      return record.origin == .socket(index) || record.origin == .flippedFrom(index)
    }
    .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    for record in mine where record.time <= until {
      balance += record.direction == .downlink ? record.bytes.count : -record.bytes.count
      worst = max(worst, balance)
    }
    return worst == Int.min ? 0 : worst
  }

  // MARK: - Forgeries

  /// What the attacker sends a device at its INIT with nonce `nonce`: a REFUSE_CLEAR for a
  /// nonce it never sent, REFUSE_SEALED, COOKIE_REPLY and RESPONSE echoing its nonce with
  /// garbage after it (and a REFUSE_SEALED for another nonce), a RESET for a made-up
  /// session, and version 1 notices (REFUSE, KICK, SESSION_UNKNOWN, TOKEN_EXPIRED, ACCEPT).
  /// Not the REFUSE_CLEAR for the seen nonce: that one is the documented exception
  /// (docs/SECURITY.md), which ends the join.
  public func forgeries(nonce: [UInt8]) -> [[UInt8]] {
    locked {
      var out: [[UInt8]] = []
      out.append([0x05] + garbage(16) + [0x01])  // REFUSE_CLEAR, a nonce not seen
      out.append([0x06] + nonce + garbage(42))  // REFUSE_SEALED, the nonce, garbage
      out.append([0x06] + garbage(58))  // REFUSE_SEALED, garbage throughout
      out.append([0x04] + nonce + garbage(56))  // COOKIE_REPLY, the nonce, garbage
      out.append([0x02] + nonce + garbage(252))  // RESPONSE, the nonce, garbage
      out.append([0x08] + garbage(24))  // RESET, a made-up session id and value
      let cookie = garbage(8)
      out.append(Self.versionOne(0x82, cookie: cookie, body: [3]))  // REFUSE INVALID_TOKEN
      out.append(Self.versionOne(0x85, cookie: cookie, body: [1]))  // KICK BANNED
      out.append(Self.versionOne(0x87, cookie: cookie, body: []))  // SESSION_UNKNOWN
      out.append(Self.versionOne(0x86, cookie: cookie, body: []))  // TOKEN_EXPIRED
      out.append(Self.versionOne(0x8A, cookie: cookie, body: [5]))  // LOGIN_REFUSE
      out.append(Self.versionOne(0x81, cookie: cookie, body: garbage(17)))  // ACCEPT
      return out
    }
  }

  /// A RESET for `sessionID` (8 bytes, as the wire carries it) with a made-up value.
  public func forgedReset(sessionID: [UInt8]) -> [UInt8] {
    locked { [0x08] + sessionID + garbage(16) }
  }

  /// `bytes` of the attacker's seeded garbage.
  public func garbageBytes(_ count: Int) -> [UInt8] { locked { garbage(count) } }

  /// A version 1 datagram ("TH", version 1, type, cookie, body: docs/PROTOCOL.md §2.2).
  public static func versionOne(_ type: UInt8, cookie: [UInt8], body: [UInt8]) -> [UInt8] {
    [0x54, 0x48, 0x01, type] + cookie + body
  }

  /// `bytes` with bit `offset % 8` of byte `offset` flipped.
  public static func flipped(_ bytes: [UInt8], at offset: Int) -> [UInt8] {
    var copy = bytes
    copy[offset] ^= 1 << UInt8(offset % 8)
    return copy
  }

  // MARK: - The proxy's thread

  private func intercept(device: Int, direction: FaultDirection, bytes: [UInt8]) -> Bool {
    let now = monotonicSeconds()
    var pass = true
    var toLink: [[UInt8]] = []
    var forged: [[UInt8]] = []
    var fromSocket: [Int] = []
    var flippedFromSocket: (copies: [[UInt8]], socket: Int)?
    var forge = false
    let isInit = direction == .uplink && bytes.first == 0x01 && bytes.count >= 18
    let nonce = isInit ? Array(bytes[2..<18]) : []
    locked {
      log.append(
        AttackRecord(
          time: now, device: device, direction: direction, bytes: bytes, origin: .genuine))
      var policy = policies[device]
      defer { policies[device] = policy }
      if isInit, policy.dropInits > 0 {
        policy.dropInits -= 1
        pass = false
      }
      if isInit, policy.forgeAtInit { policy.forgedAtInits += 1 }
      let flips = Self.flips(&policy, direction, bytes, now: now)
      if flips.drop { pass = false }
      if direction == .uplink, let index = policy.moveTo {
        flippedFromSocket = (flips.copies, index)
      } else {
        toLink = flips.copies
      }
      for delay in policy.replayAfter {
        scheduled.append(
          Scheduled(
            due: now + max(delay, 0.001), device: device, direction: direction, bytes: bytes))
      }
      if direction == .uplink {
        if let index = policy.copyTo { fromSocket.append(index) }
        if let index = policy.moveTo {
          if pass { fromSocket.append(index) }
          pass = false
        }
      }
      forge = isInit && policy.forgeAtInit
      if isInit, policy.refuseNextInit {
        policy.refuseNextInit = false
        forged.append([0x05] + nonce + [0x01])
      }
    }
    if forge { forged += forgeries(nonce: nonce) }
    for datagram in forged { inject(datagram, device: device, .downlink) }
    for datagram in toLink { inject(datagram, device: device, direction) }
    if let (copies, index) = flippedFromSocket {
      let fd = locked { sockets[index].fd }
      for copy in copies {
        note(copy, device: device, .uplink, .flippedFrom(index))
        Loopback.send(fd, copy)
      }
    }
    for index in fromSocket { send(bytes, fromSocket: index) }
    return pass
  }

  /// The flipped copies of `bytes` as `policy` arms them (none when it does not), and
  /// whether the genuine datagram is dropped (``Flip/instead``); counts its shape.
  private static func flips(
    _ policy: inout Policy, _ direction: FaultDirection, _ bytes: [UInt8], now: Double
  ) -> (copies: [[UInt8]], drop: Bool) {
    let kind = bytes.first ?? 0
    guard let mode = policy.flip, policy.flipKinds?.contains(kind) ?? true,
      kind != 0x07 || policy.flipSizes?.contains(bytes.count) ?? true
    else { return ([], false) }
    if direction == .uplink, let window = policy.flipAnswersWithin,
      now - policy.lastRelayed > window
    {
      return ([], false)
    }
    let shape = Self.shape(bytes, direction)
    let ordinal = policy.seen[shape, default: 0]
    policy.seen[shape] = ordinal + 1
    let skip = kind == 0x07 ? policy.flipSkip : 0
    guard ordinal >= skip, ordinal < skip + policy.flipTimes else {
      return ([], false)
    }
    policy.flipped.insert(shape)
    policy.flipLog.append(
      FlipRecord(
        time: now, direction: direction, kind: kind, size: bytes.count, ordinal: ordinal))
    let isInit = direction == .uplink && kind == 0x01
    let copies = (0..<bytes.count).filter { offset in
      !(isInit && policy.spareToken && Self.initToken.contains(offset))
    }.map { Self.flipped(bytes, at: $0) }
    return (copies, mode == .instead)
  }

  /// Direction, kind, and a DATA datagram's size (which names its message, ``WireShape``).
  private static func shape(_ bytes: [UInt8], _ direction: FaultDirection) -> Int {
    let kind = Int(bytes.first ?? 0)
    return direction.rawValue << 24 | kind << 16 | (kind == 0x07 ? bytes.count : 0)
  }

  // MARK: - The attacker's thread

  /// One turn: what the edge sent the attacker's sockets, then every replay that is due.
  private func turn() {
    let open = locked { sockets }
    var fds = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    let timeout = locked { scheduled.map(\.due).min() }.map {
      Int32(max(0, min(10, (($0 - monotonicSeconds()) * 1000).rounded(.up))))
    }
    if fds.isEmpty {
      usleep(UInt32(timeout ?? 10) * 1000)
    } else if poll(&fds, nfds_t(fds.count), timeout ?? 10) > 0 {
      var buffer = [UInt8](repeating: 0, count: 2048)
      for (index, fd) in fds.enumerated() where fd.revents & Int16(POLLIN | POLLERR) != 0 {
        while let (n, _) = Loopback.receive(fd.fd, into: &buffer) {
          let bytes = Array(buffer[0..<n])
          let socket = open[index]
          note(bytes, device: socket.device, .downlink, .socket(index))
          guard socket.relays else { continue }
          let flips = locked {
            let now = monotonicSeconds()
            let flips = Self.flips(&policies[socket.device], .downlink, bytes, now: now)
            if !flips.drop { policies[socket.device].lastRelayed = now }
            return flips
          }
          for copy in flips.copies { inject(copy, device: socket.device, .downlink) }
          if !flips.drop { proxy.inject(bytes, device: socket.device, .downlink) }
        }
      }
    }
    let now = monotonicSeconds()
    let due: [Scheduled] = locked {
      let ready = scheduled.filter { $0.due <= now }.sorted { $0.due < $1.due }
      scheduled.removeAll { $0.due <= now }
      return ready
    }
    for datagram in due { inject(datagram.bytes, device: datagram.device, datagram.direction) }
  }

  private func note(
    _ bytes: [UInt8], device: Int, _ direction: FaultDirection, _ origin: AttackRecord.Origin
  ) {
    let record = AttackRecord(
      time: monotonicSeconds(), device: device, direction: direction, bytes: bytes, origin: origin)
    locked { log.append(record) }
  }

  /// Seeded garbage (SplitMix64), under `lock`.
  private func garbage(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in
      random &+= 0x9E37_79B9_7F4A_7C15
      return UInt8(truncatingIfNeeded: FaultDice.mix(random) >> 24)
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }
}
