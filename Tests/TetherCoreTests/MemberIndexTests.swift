// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherSim

@testable import TetherCore

/// The uid → slot table of RemoteMembers against a dictionary, under random inserts and
/// removals dense enough to make long probe runs (and their repair on removal) common.
@Suite struct MemberIndexTests {
  /// Slots as RemoteMembers keeps them: a free list, the uid written before indexing.
  struct Model {
    var members: [RemoteMembers.Member] = []
    var free: [Int32] = []
    var index = MemberIndex()
    var reference: [UInt32: Int32] = [:]

    mutating func insert(_ uid: UInt32) {
      let slot: Int32
      if let reused = free.popLast() {
        slot = reused
        members[Int(slot)].uid = uid
      } else {
        slot = Int32(members.count)
        members.append(.init(uid: uid, lastSeen: 0, interrupted: false, generation: 0))
      }
      index.insert(slot, uid: uid, in: members)
      reference[uid] = slot
    }

    mutating func remove(_ uid: UInt32) {
      guard let slot = reference.removeValue(forKey: uid) else { return }
      index.remove(uid, in: members)
      free.append(slot)
    }

    func agrees(probing uids: ClosedRange<UInt32>) -> Bool {
      index.count == reference.count
        && uids.allSatisfy { index.find($0, in: members) == reference[$0] }
    }
  }

  @Test(arguments: [UInt64(1), 2, 3, 4])
  func randomInsertsAndRemovals_matchADictionary(seed: UInt64) {
    var random = SeededRandom(seed: seed)
    var model = Model()
    // Uids from a small range: the table is often close to half full, with collisions.
    let uids: ClosedRange<UInt32> = 0...300
    for step in 0..<20_000 {
      let uid = UInt32(random.next() % 301)
      if model.reference[uid] == nil && random.next() % 3 != 0 {
        model.insert(uid)
      } else {
        model.remove(uid)
      }
      if step % 500 == 0 { #expect(model.agrees(probing: uids)) }
    }
    #expect(model.agrees(probing: uids))
    #expect(model.reference.count > 50)
  }

  @Test func collidingUIDs_areEachFound_andRemovingOneKeepsTheOthers() {
    // Uids that differ only above bit 32 of the hash's product share a home slot.
    var model = Model()
    let home = { (uid: UInt32) in (UInt64(uid) &* 0x9E37_79B9_7F4A_7C15) >> 32 & 15 }
    let same = (UInt32(1)...5000).filter { home($0) == home(7) }.prefix(6)
    #expect(same.count == 6)
    for uid in same { model.insert(uid) }
    #expect(same.allSatisfy { model.index.find($0, in: model.members) == model.reference[$0] })
    model.remove(same[same.startIndex + 1])
    model.remove(same[same.startIndex + 3])
    #expect(model.index.count == 4)
    for uid in same {
      #expect(model.index.find(uid, in: model.members) == model.reference[uid])
    }
  }

  @Test func removeAll_forgetsEveryUID_andTheTableIsReusable() {
    var model = Model()
    for uid in UInt32(1)...40 { model.insert(uid) }
    model.index.removeAll()
    #expect(model.index.count == 0)
    #expect((UInt32(1)...40).allSatisfy { model.index.find($0, in: model.members) == nil })
    (model.members, model.free, model.reference) = ([], [], [:])
    for uid in UInt32(100)...140 { model.insert(uid) }
    #expect(model.agrees(probing: 0...150))
  }
}
