// SPDX-License-Identifier: Apache-2.0
/// Free slot numbers, last in first out: the free lists of ``RemoteMembers`` and of the
/// driver's loop. Its storage never shrinks (a count says how much of it is in use), so it
/// needs no `popLast`, which costs the Embedded library a `remove(at:)` specialization of
/// its element type beside its own (about 200 bytes of aarch64 text, when it was an
/// `[Int32]`; now a ``SlotTable``).
package struct SlotStack {
  private var slots = SlotTable()
  private var used = 0

  package init() {}

  package mutating func push(_ slot: Int32) {
    if used < slots.count { slots[used] = slot } else { slots.append(slot) }
    used += 1
  }

  package mutating func pop() -> Int32? {
    guard used > 0 else { return nil }
    used -= 1
    return slots[used]
  }

  package mutating func removeAll() { used = 0 }
}
