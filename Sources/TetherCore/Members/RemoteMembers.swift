// SPDX-License-Identifier: Apache-2.0
/// The other members of the channel, as the server's presence digests describe them, and
/// the verdicts the client draws from their silence: interrupted after `interruptedAfter`,
/// offline (DROPPED) after `offlineAfter`, back when heard again.
///
/// Work per digest entry is one hash-table lookup and a store: it does not grow with the
/// member count. Verdicts come from a heap of check times that is only touched when a
/// check falls due.
///
/// Silence is measured on the *members' clock*, which runs only while this client hears
/// from the server: the session passes a horizon (last data + a grace), and time past it
/// is "blind" and does not count. So a local outage never makes the others look silent,
/// and nobody is reported DROPPED because this device lost its own link.
struct RemoteMembers {
  /// A member in its slot: held in a ``SlotHeap/Entry``, the element type of the member
  /// checks' heap, so the Embedded library holds one array's code for the slots, the heap
  /// and the departures (a structure of its own cost about 0.4 KB of aarch64 text).
  typealias Member = SlotHeap.Entry

  let interruptedAfter: UInt64
  let offlineAfter: UInt64

  private var slots: [Member] = []
  private var freeSlots = SlotStack()
  private var index = MemberIndex()
  private var heap = DeadlineHeap()
  /// Real time that did not count (nanoseconds): the members' clock is `real - blind`.
  private var blind: UInt64 = 0
  /// Members reported offline (QUIT or DROPPED) within the last `offlineAfter`, with when
  /// (members' clock). A digest that left the server before the verdict but arrives after
  /// it (delayed, duplicated, overtaken) must not bring the member back: only news of it
  /// from after the verdict does. Older records can no longer refuse anything (an entry is
  /// taken only if silent for less than `offlineAfter`), so they are dropped.
  ///
  /// After a QUIT, an ALIVE entry is refused for `interruptedAfter` whatever its silence:
  /// a digest sent just before the LEFT and overtaken by it carries a silence shorter than
  /// its own delay, so its news looks newer than the verdict. A member that really comes
  /// back is announced JOINED, which counts at once.
  /// (`quitAt` is real time: the members' clock stops while this client hears nothing, and
  /// the window must not stretch with it.)
  ///
  /// Each is held as a heap entry (``Departure``): the element type of the member checks'
  /// heap, so the Embedded library holds one array's code for both (a tuple of its own cost
  /// about 0.4 KB of aarch64 text).
  private var departed: [Departure] = []

  init(interruptedAfter: Interval, offlineAfter: Interval) {
    self.interruptedAfter = interruptedAfter.nanoseconds
    self.offlineAfter = offlineAfter.nanoseconds
  }

  var count: Int { index.count }

  /// Entries queued for checking (live and stale); for tests of the heap discipline.
  var heapCount: Int { heap.count }

  /// Data arrived at `now` after the clock had stopped at `horizon`: the gap is blind.
  mutating func accountGap(stoppedAt horizon: Instant, resumedAt now: Instant) {
    if now > horizon { blind &+= now.nanoseconds - horizon.nanoseconds }
  }

  /// The members' clock starts this far above zero, so a member silent for up to
  /// `UInt32.max` ms (49 days) can be placed before a host clock that starts near zero.
  static let bias: UInt64 = 1 << 53

  private func clock(_ real: Instant) -> UInt64 {
    let counted = real.nanoseconds > blind ? real.nanoseconds - blind : 0
    let (value, overflow) = counted.addingReportingOverflow(Self.bias)
    return overflow ? .max : value
  }

  /// When the next verdict falls due in real time, or nil if none can before `horizon`
  /// moves (it moves when data arrives, and the session checks again then).
  func nextDeadline(horizon: Instant) -> Instant? {
    guard let top = heap.top else { return nil }
    let counted = top.due > Self.bias ? top.due - Self.bias : 0
    let (real, overflow) = counted.addingReportingOverflow(blind)
    guard !overflow, real <= horizon.nanoseconds else { return nil }
    return Instant(nanoseconds: real)
  }

  /// Applies one digest entry seen at `at` (the members' clock is capped by the caller).
  mutating func apply(
    _ entry: PresenceEntry, at real: Instant, elapsedMs: UInt32, into output: inout ChannelOutput
  ) {
    let now = clock(real)
    let silent = Interval.milliseconds(UInt64(entry.silentForMs)).nanoseconds
    let seen = now > silent ? now - silent : 0
    if let slot = index.find(entry.uid, in: slots) {
      if entry.kind == .left {
        remove(slot: slot)
        recordDeparture(of: entry.uid, at: now, quitAt: real.nanoseconds)
        output.notify(.userOffline(uid: entry.uid, reason: .quit))
        return
      }
      // Changed in a copy, stored back once: one bounds and uniqueness check, not one at
      // each access.
      var member = slots[Int(slot)]
      if seen > member.lastSeen { member.lastSeen = seen }
      let resumed = member.interrupted && now &- member.lastSeen < interruptedAfter
      if resumed {
        member.interrupted = false
        member.generation &+= 1
      }
      Member.put(member, at: Int(slot), in: &slots)
      if resumed {
        heap.push(
          .init(due: member.lastSeen &+ interruptedAfter, slot: slot, generation: member.generation)
        )
        output.notify(.remoteMemberResumed(uid: entry.uid))
      }
    } else if entry.kind != .left && silent < offlineAfter
      && !isStale(entry, seen: seen, now: now, real: real.nanoseconds)
    {
      add(uid: entry.uid, lastSeen: seen)
      output.notify(.userJoined(uid: entry.uid, elapsedMs: elapsedMs))
    }
  }

  /// Draws every verdict due by `at` (capped by the caller at the horizon).
  mutating func fireDue(at real: Instant, into output: inout ChannelOutput) {
    let now = clock(real)
    while let top = heap.top, top.due <= now {
      _ = heap.popTop()
      let s = Int(top.slot)
      guard s < slots.count, slots[s].generation == top.generation else { continue }
      let member = slots[s]
      let offlineAt = member.lastSeen &+ offlineAfter
      if offlineAt <= now {
        remove(slot: top.slot)
        recordDeparture(of: member.uid, at: now, quitAt: nil)
        output.notify(.userOffline(uid: member.uid, reason: .dropped))
      } else if member.interrupted || member.lastSeen &+ interruptedAfter > now {
        // Heard from since this check was queued (or already reported): look again later.
        let next = member.interrupted ? offlineAt : member.lastSeen &+ interruptedAfter
        heap.push(.init(due: next, slot: top.slot, generation: member.generation))
      } else {
        slots[s].interrupted = true
        heap.push(.init(due: offlineAt, slot: top.slot, generation: member.generation))
        output.notify(.remoteMemberInterrupted(uid: member.uid))
      }
    }
  }

  /// Forgets everyone, silently (the local session ended). Keeps the storage (emptied one
  /// element at a time: `removeAll(keepingCapacity:)` would cost the Embedded library a
  /// generic specialization per element type, for a call made once per session).
  mutating func removeAll() {
    Member.shorten(&slots, to: 0)
    freeSlots.removeAll()
    index.removeAll()
    heap.removeAll()
    Departure.shorten(&departed, to: 0)
    blind = 0
  }

  /// True when `entry` is older news than the member's recent verdict (see `departed`).
  /// Forgets the records that can no longer refuse anything.
  private mutating func isStale(
    _ entry: PresenceEntry, seen: UInt64, now: UInt64, real: UInt64
  ) -> Bool {
    guard !departed.isEmpty else { return false }
    forgetDepartures(at: now)
    return departed.contains { departure in
      guard departure.uid == entry.uid else { return false }
      if departure.at >= seen { return true }
      guard entry.kind == .alive, let quitAt = departure.quitAt else { return false }
      return real &- quitAt < interruptedAfter
    }
  }

  private mutating func recordDeparture(of uid: UInt32, at now: UInt64, quitAt: UInt64?) {
    forgetDepartures(at: now, of: uid)
    Departure.add(Departure(uid: uid, at: now, quitAt: quitAt), to: &departed)
  }

  /// Drops the departures that can no longer refuse anything at `now`, and that of `uid`.
  /// The others keep their order. (One loop for both callers: removeAll(where:) was
  /// inlined into each.)
  private mutating func forgetDepartures(at now: UInt64, of uid: UInt32? = nil) {
    var kept = 0
    for index in departed.indices {
      let departure = departed[index]
      if departure.uid == uid || departure.at &+ offlineAfter < now { continue }
      departed[kept] = departure
      kept += 1
    }
    Departure.shorten(&departed, to: kept)
  }

  private mutating func add(uid: UInt32, lastSeen: UInt64) {
    let slot: Int32
    let generation: UInt32
    if let free = freeSlots.pop() {
      slot = free
      generation = slots[Int(slot)].generation &+ 1
      Member.put(
        Member(uid: uid, lastSeen: lastSeen, interrupted: false, generation: generation),
        at: Int(slot), in: &slots)
    } else {
      slot = Int32(truncatingIfNeeded: slots.count)
      generation = 0
      Member.add(
        Member(uid: uid, lastSeen: lastSeen, interrupted: false, generation: 0), to: &slots)
    }
    index.insert(slot, uid: uid, in: slots)
    heap.push(.init(due: lastSeen &+ interruptedAfter, slot: slot, generation: generation))
  }

  private mutating func remove(slot: Int32) {
    index.remove(slots[Int(slot)].uid, in: slots)
    slots[Int(slot)].generation &+= 1
    freeSlots.push(slot)
  }
}

/// A departure of ``RemoteMembers``: a member reported offline at `at` (members' clock), and,
/// for a QUIT, `quitAt` (real time). Held in a ``SlotHeap/Entry`` (`key` the time, `payload`
/// `quitAt`, `slot` the uid's bits), which is what makes it cheap (see `departed`); a DROPPED
/// one has `payload` all ones, so a QUIT's real time is kept below that (a monotonic clock
/// in nanoseconds reaches it after 584 years).
typealias Departure = SlotHeap.Entry

extension SlotHeap.Entry {
  init(uid: UInt32, at: UInt64, quitAt: UInt64?) {
    self.init(
      key: at, payload: quitAt.map { min($0, .max - 1) } ?? .max,
      slot: Int32(bitPattern: uid))
  }

  var uid: UInt32 {
    get { UInt32(bitPattern: slot) }
    set { slot = Int32(bitPattern: newValue) }
  }
  var at: UInt64 { key }
  var quitAt: UInt64? { payload == .max ? nil : payload }
}

extension SlotHeap.Entry {
  /// A member of ``RemoteMembers``: `slot` holds the uid's bits, `key` when it was last
  /// heard from (members' clock), `payload` its generation (low 32 bits) and whether it is
  /// reported interrupted (bit 32).
  init(uid: UInt32, lastSeen: UInt64, interrupted: Bool, generation: UInt32) {
    self.init(
      key: lastSeen, payload: UInt64(generation) | (interrupted ? 1 << 32 : 0),
      slot: Int32(bitPattern: uid))
  }

  /// Last heard from, on the members' clock.
  var lastSeen: UInt64 {
    get { key }
    set { key = newValue }
  }

  var interrupted: Bool {
    get { payload & (1 << 32) != 0 }
    set { payload = payload & ~(1 << 32) | (newValue ? 1 << 32 : 0) }
  }

  var generation: UInt32 {
    get { UInt32(truncatingIfNeeded: payload) }
    set { payload = payload & ~0xFFFF_FFFF | UInt64(newValue) }
  }
}
