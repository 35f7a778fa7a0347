// SPDX-License-Identifier: Apache-2.0
import TetherCore

/// What an edge of a fleet knows of the bus, as a value (sans-IO, like ``EdgeServer``): the
/// bucket as its watcher last showed it (the mirror), the other edges' beacons, and the
/// records this edge holds (its claims), each written with conditional writes only.
///
/// A claim is what this edge wants its record to be (joined, left, or gone); at most one
/// write per key is in flight, and what one input changed is written once
/// (``takeCommands()``), so a takeover inside this edge (the old session ends, the new one
/// joins) is one update, not a delete and a create.
///
/// Who holds an identity when two edges claim it: the one that wrote on the other's
/// revision (it read the other's record, so its session is the newer). Where neither did (a
/// partition, or two writes that crossed), the later join by the edges' clocks, ties broken
/// by owner (``FleetRecord/isLater(than:)``). A record whose owner is gone (left, deleted,
/// an edge silent past forget-after, this edge's own previous incarnation) is free.
struct FleetState {
  /// What the server does about a change of the mirror.
  enum Change: Equatable {
    /// A remote member joined (or changed hands between remote edges): JOINED, or a
    /// *joined* member event.
    case joined(FleetKey)
    /// A remote member quit: LEFT, or a *left* member event.
    case left(FleetKey)
    /// A remote member is no longer listed, silently (forgotten, reaped, or taken over by
    /// this edge): nothing for channel members; a login member's *left* event.
    case gone(FleetKey)
    /// Another edge's session holds what this edge's session held: end this one.
    case lost(FleetKey)
  }

  struct Mirrored {
    var record: FleetRecord
    var revision: UInt64
    /// When this edge saw the record's holder take it (a remote member's JOINED window) or,
    /// for a record found at start, when it was first seen.
    var since: Instant
  }

  struct Claim {
    /// What this edge's record should be: nil, deleted.
    var want: FleetRecord?
    /// The revision of this edge's record in the bucket, as its last write or its watcher
    /// said (nil: none known).
    var revision: UInt64?
    /// The revision of the key's value as the watcher last showed it since the bus came up,
    /// whatever it holds (another edge's record, or bytes that are no record); nil once
    /// deleted. A write goes on it when it is the latest known.
    var keyRevision: UInt64?
    /// The tag of the write in flight, and what it writes.
    var writing: (tag: UInt64, record: FleetRecord?)?
    /// A write is due.
    var dirty = true
  }

  struct EdgeSeen {
    var lastBeacon: Instant
    var silences: [String: UInt64]
  }

  let me: FleetOwner
  /// An edge whose beacon is this old is gone: its records are reaped.
  let forgetAfter: Interval
  /// A left record stays this long (its LEFT is repeated as long), then is deleted.
  let leftKept: Interval

  private(set) var isUp = false
  /// Since when the bus has been up (an edge silent while this edge was cut off is not
  /// taken for dead on its return).
  private var upSince: Instant = .zero
  private var inSnapshot = false
  /// The keys the watcher's state held so far (while ``inSnapshot``).
  private var snapshotSeen = Set<FleetKey>()
  private(set) var mirror: [FleetKey: Mirrored] = [:]
  /// Remote channel members (uids) and login channel members, by channel.
  private(set) var remoteMembers: [ChannelName: Set<UInt32>] = [:]
  private(set) var remoteLoginMembers: [ChannelName: Set<UserID>] = [:]
  private(set) var edges: [FleetOwner: EdgeSeen] = [:]
  /// When another edge was last seen writing a record as it happened (not in a state read):
  /// a sign of life as a beacon is, so the records an edge writes on its return are not
  /// taken for a gone edge's before its first beacon arrives.
  private var lastWrite: [FleetOwner: Instant] = [:]
  private(set) var claims: [FleetKey: Claim] = [:]
  /// Claims that may have a write due (the others wait for an answer, an entry or a tick).
  private var due = Set<FleetKey>()
  /// Claims whose last write found another revision than it expected (or failed): the
  /// next waits for the watcher's entry of the key, or the next beacon tick.
  private var retrying = Set<FleetKey>()
  /// Claims written as left, and when (each is deleted ``leftKept`` later).
  private var leaving: [FleetKey: Instant] = [:]
  /// The mirror's keys by holder, to find a gone edge's records without a scan.
  private var byOwner: [FleetOwner: Set<FleetKey>] = [:]
  private var inFlight: [UInt64: FleetKey] = [:]
  /// Deletes of other edges' records in flight (their answers change nothing).
  private var reaping: [UInt64: FleetKey] = [:]
  private var reapingKeys = Set<FleetKey>()
  private var nextTag: UInt64 = 1
  /// Messages, reaps and purges, in the order they were made.
  private var publishes: [FleetCommand] = []
  private var lastPurge: Instant = .zero
  /// A key was deleted (a tombstone made) since the last purge: in steady state nothing is,
  /// and the bus hears no purge.
  private var tombstones = false
  private(set) var counters = FleetCounters()

  init(me: FleetOwner, forgetAfter: Interval, leftKept: Interval) {
    self.me = me
    self.forgetAfter = forgetAfter
    self.leftKept = leftKept
  }

  // MARK: - This edge's sessions

  /// This edge's session holds `key` since `joinedAtMs` (unix ms).
  mutating func claim(_ key: FleetKey, joinedAtMs: UInt64) {
    var claim = claims[key] ?? Claim()
    claim.want = FleetRecord(owner: me, joinedAtMs: joinedAtMs, state: .joined)
    claim.dirty = true
    claims[key] = claim
    leaving[key] = nil
    due.insert(key)
  }

  /// This edge's session that held `key` ended: its record becomes left (`quit`: the
  /// others are told it left) or is deleted.
  mutating func release(_ key: FleetKey, quit: Bool, now: Instant) {
    guard var claim = claims[key], let want = claim.want, want.state == .joined else { return }
    claim.want = quit ? FleetRecord(owner: me, joinedAtMs: want.joinedAtMs, state: .left) : nil
    claim.dirty = true
    claims[key] = claim
    leaving[key] = quit ? now : nil
    due.insert(key)
  }

  /// Whether this edge's session holds `key` (a claim that wants it joined).
  func holds(_ key: FleetKey) -> Bool { claims[key]?.want?.state == .joined }

  // MARK: - Output

  /// A message for every edge (this one hears it too, and ignores its own).
  mutating func publish(_ subject: String, _ payload: [UInt8]) {
    publishes.append(.publish(subject: subject, payload: payload))
  }

  /// The writes due (one per key at most, none while the bus is down or its state is being
  /// read), then the messages, in order.
  mutating func takeCommands() -> [FleetCommand] {
    var commands: [FleetCommand] = []
    if isUp && !inSnapshot && !due.isEmpty {
      let keys = due
      due.removeAll(keepingCapacity: true)
      for key in keys {
        if let write = nextWrite(key) { commands.append(.write(write)) }
      }
    }
    commands += publishes
    publishes.removeAll()
    return commands
  }

  private mutating func nextWrite(_ key: FleetKey) -> FleetWrite? {
    guard var claim = claims[key], claim.dirty, !retrying.contains(key), claim.writing == nil
    else {
      return nil
    }
    let held = mirror[key]
    // Already in the bucket as wanted (the watcher showed this edge's own record).
    if let held, held.record == claim.want {
      claim.revision = max(claim.revision ?? 0, held.revision)
      claim.dirty = false
      claims[key] = claim
      return nil
    }
    let operation: FleetWrite.Operation
    if let want = claim.want {
      let base = max(claim.revision ?? 0, claim.keyRevision ?? 0, held?.revision ?? 0)
      operation = base == 0 ? .create(want.bytes) : .update(want.bytes, revision: base)
    } else {
      // Deleted: only this edge's own record, on its revision.
      guard
        let revision = claim.revision ?? held.flatMap({ $0.record.owner == me ? $0.revision : nil })
      else {
        drop(key)
        return nil
      }
      operation = .delete(revision: revision)
    }
    let tag = nextTag
    nextTag &+= 1
    claim.writing = (tag, claim.want)
    claim.dirty = false
    claims[key] = claim
    inFlight[tag] = key
    counters.writes &+= 1
    return FleetWrite(tag: tag, key: key.key, operation: operation)
  }

  /// Deletes `key`'s record at `revision` (another edge's, gone), unless one is in flight.
  private mutating func reap(_ key: FleetKey, revision: UInt64) -> FleetWrite? {
    guard reapingKeys.insert(key).inserted else { return nil }
    let tag = nextTag
    nextTag &+= 1
    reaping[tag] = key
    counters.reaped &+= 1
    return FleetWrite(tag: tag, key: key.key, operation: .delete(revision: revision))
  }

  // MARK: - Input

  /// What `input` changes; the server acts on the changes.
  mutating func apply(_ input: FleetInput, now: Instant) -> [Change] {
    switch input {
    case .up:
      isUp = true
      upSince = now
      inSnapshot = true
      snapshotSeen.removeAll()
      for key in claims.keys { claims[key]?.keyRevision = nil }  // the state's read tells
      return []
    case .down:
      isUp = false
      inSnapshot = false
      snapshotSeen.removeAll()
      return []
    case .entry(let entry):
      return inSnapshot ? snapshotEntry(entry, now: now) : apply(entry, now: now)
    case .snapshotEnd:
      return snapshotEnded(now: now)
    case .written(let tag, let result):
      written(tag, result)
      return []
    case .message:
      return []  // the server reads messages (beacons, admin actions)
    }
  }

  /// One entry of the watcher's state, applied as it comes (so a large state costs the
  /// loop many small batches, not one long one): what changed while the bus was away is
  /// told as entries are. What this edge's claim of the key knows of its record is the
  /// snapshot's from here: its own record's revision; none if the key holds an older
  /// revision than this edge wrote (the bucket was made again, its revisions counted
  /// afresh).
  private mutating func snapshotEntry(_ entry: FleetEntry, now: Instant) -> [Change] {
    guard let key = FleetKey(entry.key) else { return apply(entry, now: now) }  // counted
    snapshotSeen.insert(key)
    if let claim = claims[key] {
      if entry.value.flatMap({ FleetRecord($0) })?.owner == me {
        claims[key]?.revision = entry.revision
      } else if let revision = claim.revision, entry.revision < revision {
        claims[key]?.revision = nil
      }
    }
    return apply(entry, now: now, ordered: false)
  }

  /// The watcher's state has replaced the mirror: keys it did not hold are deleted (members
  /// who left meanwhile are told), claims of them know no revision, and every claim is
  /// checked against the state and written again where it differs.
  private mutating func snapshotEnded(now: Instant) -> [Change] {
    inSnapshot = false
    for key in claims.keys where !snapshotSeen.contains(key) { claims[key]?.revision = nil }
    var changes: [Change] = []
    for key in mirror.keys where !snapshotSeen.contains(key) {
      changes += apply(FleetEntry(key: key.key, value: nil, revision: 0), now: now)
    }
    snapshotSeen.removeAll()
    for key in claims.keys { claims[key]?.dirty = true }
    due.formUnion(claims.keys)
    retrying.removeAll()
    // Records of this edge that no session here holds (a write whose answer was lost):
    // deleted, on their revision.
    for key in byOwner[me] ?? [] where claims[key] == nil {
      if let held = mirror[key], let write = reap(key, revision: held.revision) {
        publishes.append(.write(write))
      }
    }
    return changes
  }

  /// A key's new value (or its deletion), as the watcher delivers them: in revision order
  /// (`ordered`: one older than the mirror's is late, and dropped; a snapshot's entries
  /// replace the mirror's whatever their revision).
  mutating func apply(_ entry: FleetEntry, now: Instant, ordered: Bool = true) -> [Change] {
    guard let key = FleetKey(entry.key) else {
      counters.foreignKeys &+= 1
      return []
    }
    let record = entry.value.flatMap { FleetRecord($0) }
    if entry.value != nil, record == nil { counters.malformed &+= 1 }
    let old = mirror[key]
    if ordered, let old, entry.revision != 0, entry.revision < old.revision { return [] }
    if let old { byOwner[old.record.owner]?.remove(key) }
    if let record {
      let renewed =
        old.map { $0.record.owner != record.owner || $0.record.joinedAtMs != record.joinedAtMs }
        ?? true
      mirror[key] = Mirrored(
        record: record, revision: entry.revision, since: renewed ? now : old?.since ?? now)
      byOwner[record.owner, default: []].insert(key)
    } else {
      mirror[key] = nil
      tombstones = true
    }
    if let owner = old?.record.owner, byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
    if claims[key] != nil {
      retrying.remove(key)
      due.insert(key)
      if entry.value == nil {
        // Deleted (reaped, or gone from a state read): nothing of this edge's is left there,
        // and the next write creates (a create goes on a tombstone).
        claims[key]?.revision = nil
        claims[key]?.keyRevision = nil
      } else {
        claims[key]?.keyRevision = entry.revision
      }
    }
    if ordered, let record, record.owner != me { lastWrite[record.owner] = now }
    var changes = remoteChanges(key, old: old?.record, new: record)
    if let record, record.owner == me {
      // This edge's own write, seen back: its revision is known from here.
      if var claim = claims[key], claim.want == record || claim.writing?.record == record {
        claim.revision = max(claim.revision ?? 0, entry.revision)
        claims[key] = claim
      }
    } else if let lost = settle(key, against: record, revision: entry.revision, now: now) {
      changes.append(lost)
    }
    return changes
  }

  /// What the members of this edge are told about a remote holder of `key`.
  private mutating func remoteChanges(_ key: FleetKey, old: FleetRecord?, new: FleetRecord?)
    -> [Change]
  {
    let wasRemote = old.map { $0.owner != me && $0.state == .joined } ?? false
    let isRemote = new.map { $0.owner != me && $0.state == .joined } ?? false
    index(key, present: isRemote)
    if isRemote, let new {
      let sameHolder = wasRemote && old?.owner == new.owner && old?.joinedAtMs == new.joinedAtMs
      return sameHolder ? [] : [.joined(key)]
    }
    guard wasRemote else { return [] }
    if new?.state == .left && new?.owner == old?.owner { return [.left(key)] }
    return [.gone(key)]
  }

  private mutating func index(_ key: FleetKey, present: Bool) {
    // In place: a copy taken out of the dictionary and put back would copy the whole set
    // at each change (a channel of n remote members read at start: n² work).
    switch key {
    case .member(let channel, let uid):
      if present {
        remoteMembers[channel, default: []].insert(uid)
      } else if remoteMembers[channel]?.remove(uid) != nil, remoteMembers[channel]?.isEmpty == true
      {
        remoteMembers[channel] = nil
      }
    case .loginMember(let channel, let user):
      if present {
        remoteLoginMembers[channel, default: []].insert(user)
      } else if remoteLoginMembers[channel]?.remove(user) != nil,
        remoteLoginMembers[channel]?.isEmpty == true
      {
        remoteLoginMembers[channel] = nil
      }
    case .user: break
    }
  }

  /// Settles a claim of this edge against another's record of the same key: `.lost` when
  /// the other holds it; else this edge's record is written (again) on that revision.
  private mutating func settle(
    _ key: FleetKey, against record: FleetRecord?, revision: UInt64, now: Instant
  ) -> Change? {
    guard let claim = claims[key] else { return nil }
    guard let record, record.state == .joined, !isGone(record.owner, now: now) else {
      // Free (left, deleted, or its holder gone): a claim that wants it joined writes over
      // it; one that wanted its own record gone or left has nothing left to write.
      if claim.want?.state != .joined, record != nil {
        drop(key)
      } else {
        claims[key]?.dirty = true  // written again (a reap of this edge's record included)
      }
      return nil
    }
    guard let want = claim.want, want.state == .joined else {
      drop(key)  // the key is the other's now
      return nil
    }
    let theyWroteOnOurs = claim.revision.map { revision > $0 } ?? false
    guard theyWroteOnOurs || !want.isLater(than: record) else {
      claims[key]?.dirty = true  // this edge's session is the later: it writes on theirs
      return nil
    }
    // The other session is the newer: this one ends, and the other's record is not touched.
    counters.lost &+= 1
    drop(key)
    return .lost(key)
  }

  /// Forgets the claim of `key` (its write in flight, if any, is answered to nobody).
  private mutating func drop(_ key: FleetKey) {
    claims[key] = nil
    leaving[key] = nil
    due.remove(key)
    retrying.remove(key)
  }

  /// Whether `owner` is gone: this edge's own previous incarnation (or a namesake), or an
  /// edge last heard (a beacon, or a record written as it happened) forget-after ago,
  /// counting only time this edge was on the bus.
  func isGone(_ owner: FleetOwner, now: Instant) -> Bool {
    if owner.edgeID == me.edgeID { return owner != me }
    let heard = max(edges[owner]?.lastBeacon ?? .zero, lastWrite[owner] ?? .zero)
    return now.since(max(heard, upSince)) >= forgetAfter
  }

  private mutating func written(_ tag: UInt64, _ result: FleetWriteResult) {
    if let key = reaping.removeValue(forKey: tag) {
      reapingKeys.remove(key)
      return
    }
    guard let key = inFlight.removeValue(forKey: tag), var claim = claims[key],
      let writing = claim.writing, writing.tag == tag
    else { return }
    claim.writing = nil
    switch result {
    case .written(let revision):
      if writing.record == nil {
        claim.revision = nil  // deleted: a later write creates
        if claim.want == nil { return drop(key) }
      } else {
        claim.revision = revision
      }
      if claim.want != writing.record { claim.dirty = true }
      due.insert(key)
    case .conflict:
      counters.conflicts &+= 1
      if writing.record == nil || claim.want == nil {
        // Its record was written over: there is nothing of this edge's left to delete.
        return drop(key)
      }
      // As far as the watcher says the key holds nothing (deleted, perhaps after this
      // write's own entry came): the next write creates.
      if mirror[key] == nil && claim.keyRevision == nil { claim.revision = nil }
      claim.dirty = true
      retrying.insert(key)
    case .failed:
      counters.failed &+= 1
      claim.dirty = true
      retrying.insert(key)
    }
    claims[key] = claim
  }

  // MARK: - Beacons and time

  /// Another edge's beacon (this edge's own is ignored).
  mutating func heard(_ beacon: FleetBeacon, now: Instant) {
    guard beacon.owner != me else { return }
    if beacon.owner.edgeID == me.edgeID { counters.namesakes &+= 1 }
    edges[beacon.owner] = EdgeSeen(lastBeacon: now, silences: beacon.silences)
  }

  /// How long the remote member of `key` has been silent: its edge's last beacon's age
  /// plus the silence that beacon listed (the record's first sight before any beacon).
  func silence(of key: FleetKey, now: Instant) -> Interval? {
    guard let held = mirror[key], held.record.owner != me else { return nil }
    guard let seen = edges[held.record.owner] else { return now.since(held.since) }
    let listed = Interval.milliseconds(seen.silences[key.key] ?? 0)
    return now.since(seen.lastBeacon) + listed
  }

  /// Every beacon interval: writes that waited are tried again, left records past their
  /// time are deleted, the records of gone edges are reaped (only while on the bus), and
  /// every forget-after the bucket's tombstones are purged (if a key was deleted since).
  mutating func tick(now: Instant) {
    due.formUnion(retrying)
    retrying.removeAll()
    for (key, at) in leaving where now.since(at) >= leftKept {
      leaving[key] = nil
      claims[key]?.want = nil
      claims[key]?.dirty = true
      due.insert(key)
    }
    guard isUp, !inSnapshot else { return }
    if tombstones && now.since(lastPurge) >= forgetAfter {
      lastPurge = now
      tombstones = false
      publishes.append(.purgeDeletes)
    }
    for (owner, keys) in byOwner where owner != me && isGone(owner, now: now) {
      for key in keys where claims[key] == nil {
        guard let held = mirror[key], let write = reap(key, revision: held.revision) else {
          continue
        }
        publishes.append(.write(write))
      }
    }
    for owner in edges.keys where isGone(owner, now: now) { edges[owner] = nil }
    for owner in lastWrite.keys where isGone(owner, now: now) { lastWrite[owner] = nil }
  }
}

/// What the fleet did, for the log and the tests.
public struct FleetCounters: Equatable, Sendable {
  public var writes: UInt64 = 0
  public var conflicts: UInt64 = 0
  public var failed: UInt64 = 0
  /// Sessions of this edge ended because another edge's newer session took their identity.
  public var lost: UInt64 = 0
  /// Records of gone edges deleted.
  public var reaped: UInt64 = 0
  /// Keys in the bucket that no edge writes; records and messages that did not parse.
  public var foreignKeys: UInt64 = 0
  public var malformed: UInt64 = 0
  /// Beacons from another edge with this edge's id (two edges given one `--edge-id`).
  public var namesakes: UInt64 = 0
}
