// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Tether

/// What a shared socket hands datagrams on by (docs/DESIGN.md, "The shared socket"): the
/// keys protocol version 2 carries in clear, each session's last nonces and session ids,
/// and the table from key to session, against a plain model.
@Suite struct RouteTableTests {
  /// A datagram of `kind` whose bytes 1 … are `key`'s (big-endian) at `offset`, `size` long.
  private func datagram(_ kind: UInt8, key: UInt64, at offset: Int, size: Int) -> ArraySlice<UInt8>
  {
    var bytes = [UInt8](repeating: 0xEE, count: size)
    bytes[0] = kind
    for index in 0..<8 {
      bytes[offset + index] = UInt8(truncatingIfNeeded: key >> (56 - 8 * index))
    }
    return bytes[...]
  }

  @Test func theEdgesAnswers_areKeyedByWhatTheyEcho_andTheDevicesDatagramsByWhatTheyMakeKnown() {
    let id: UInt64 = 0x5E55_0000_0000_0007
    let nonce: UInt64 = 0x0123_4567_89AB_CDEF
    // RESPONSE, COOKIE_REPLY, REFUSE_CLEAR, REFUSE_SEALED echo N_d at byte 1; DATA and RESET
    // carry the session id there.
    for (kind, key, size) in [
      (UInt8(0x02), nonce, 269), (0x04, nonce, 73), (0x05, nonce, 18), (0x06, nonce, 59),
      (0x07, id, 46), (0x08, id, 25),
    ] {
      #expect(ClearKey.received(datagram(kind, key: key, at: 1, size: size)) == key, "\(kind)")
    }
    // Kinds the edge never sends, and datagrams too short to name anything.
    for kind: UInt8 in [0x00, 0x01, 0x03, 0x09, 0x54] {
      #expect(ClearKey.received(datagram(kind, key: id, at: 1, size: 46)) == nil, "\(kind)")
    }
    #expect(ClearKey.received([0x07, 1, 2, 3, 4, 5, 6, 7][...]) == nil)
    // The INIT makes its N_d known (byte 2), the CONFIRM and DATA their session id (byte 1).
    #expect(ClearKey.sent(datagram(0x01, key: nonce, at: 2, size: 469))! == (nonce, true))
    #expect(ClearKey.sent(datagram(0x03, key: id, at: 1, size: 201))! == (id, false))
    #expect(ClearKey.sent(datagram(0x07, key: id, at: 1, size: 42))! == (id, false))
    #expect(ClearKey.sent(datagram(0x02, key: id, at: 1, size: 269)) == nil)
  }

  @Test func aSessionKeepsItsLastTwoNonces_andItsLastFourSessionIDs() {
    var keys = RouteKeys()
    #expect(keys.learn(1, isNonce: true)! == (1, 0))
    #expect(keys.learn(2, isNonce: true)! == (2, 0))
    #expect(keys.learn(1, isNonce: true) == nil)  // held: the table need not change
    #expect(keys.learn(3, isNonce: true)! == (3, 2))  // 1 was used last, 2 goes
    for id: UInt64 in 10...13 { #expect(keys.learn(id, isNonce: false)! == (id, 0)) }
    #expect(keys.learn(13, isNonce: false) == nil)
    #expect(keys.learn(10, isNonce: false) == nil)  // moved to the front
    #expect(keys.learn(14, isNonce: false)! == (14, 11))  // the least recent goes
    #expect(keys.learn(0, isNonce: false) == nil)  // 0 names nothing
    var held: [UInt64] = []
    keys.visit { held.append($0) }
    #expect(held.sorted() == [1, 3, 10, 12, 13, 14])
  }

  /// Random sets and removals, many colliding in their home (ids of one epoch differ in
  /// their low bits), against a dictionary.
  @Test func theTable_agreesWithADictionary_throughGrowthAndBackwardShiftDeletion() {
    var table = RouteTable()
    defer { table.free() }
    var model: [UInt64: Int32] = [:]
    var random = SystemRandomNumberGenerator()
    for step in 0..<20_000 {
      let key = UInt64(random.next() % 300) | 0x5E55_0000_0000_0000
      let slot = Int32(random.next() % 50)
      if random.next() % 3 == 0 {
        table.remove(key, of: slot)
        if model[key] == slot { model[key] = nil }
      } else {
        table.set(key, to: slot)
        model[key] = slot
      }
      if step % 97 == 0 {
        for probe in 0..<300 {
          let key = UInt64(probe) | 0x5E55_0000_0000_0000
          #expect(table.find(key) == model[key], "step \(step), key \(probe)")
        }
      }
      #expect(table.count == model.count)
    }
    table.reserve(10_000)  // growth keeps every entry
    for (key, slot) in model { #expect(table.find(key) == slot) }
  }
}
